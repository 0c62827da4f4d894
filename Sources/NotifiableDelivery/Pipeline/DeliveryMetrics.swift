import CoreMetrics
import NotifiableCore
import Synchronization

/// What the worker counts, through swift-metrics: whichever factory it is given (the process's
/// Prometheus registry in `notifiable serve`, a registry of its own in each test).
///
/// - `notifiable_deliveries_total{app_id,provider,outcome}`: one per send attempt's outcome;
///   outcomes exclude each other (a token the gateway called dead, and that was invalidated,
///   counts as `token_invalidated`, not also as `failed`). A series appears with an app's first
///   attempt; apps are few, devices and users never become labels.
/// - `notifiable_delivery_retries_total{provider}`: sends that were a retry (attempt 2 or later).
/// - `notifiable_gateway_request_duration_seconds{provider,mode}`: time spent in the sender for
///   one push, `mode` `live` or `sandbox` (the built-in fake gateways).
/// - `notifiable_token_invalidations_total{provider}`: devices marked invalid by a gateway's answer.
/// - `notifiable_queue_lease_rescues_total`, `notifiable_queue_expired_total`: deliveries the
///   maintenance loop returned after their worker's lease ran out, or settled dead because their
///   notification expired while they waited.
public struct DeliveryMetrics: Sendable {
    public enum Outcome: String, Sendable, CaseIterable {
        case sent, retrying, failed, dead
        case tokenInvalidated = "token_invalidated"
    }

    public static let gatewayDurationLabel = "notifiable_gateway_request_duration_seconds"

    private struct OutcomeKey: Hashable {
        let appID: Int64
        let provider: Provider
        let outcome: Outcome
    }

    private struct DurationKey: Hashable {
        let provider: Provider
        let sandbox: Bool
    }

    private let factory: any MetricsFactory
    private let outcomes = OutcomeCounters()

    /// The per-app counters, made on first use and shared by copies of these metrics.
    private final class OutcomeCounters: Sendable {
        let counters = Mutex<[OutcomeKey: CoreMetrics.Counter]>([:])
    }
    private let retries: [Provider: CoreMetrics.Counter]
    private let invalidations: [Provider: CoreMetrics.Counter]
    private let gatewayDurations: [DurationKey: CoreMetrics.Timer]
    private let leaseRescues: CoreMetrics.Counter
    private let expired: CoreMetrics.Counter

    /// Every series is made up front, so each shows (as 0) from the first scrape and `rate()`
    /// sees its first increase.
    public init(factory: any MetricsFactory) {
        self.factory = factory
        var retries: [Provider: CoreMetrics.Counter] = [:]
        var invalidations: [Provider: CoreMetrics.Counter] = [:]
        var gatewayDurations: [DurationKey: CoreMetrics.Timer] = [:]
        for provider in Provider.allCases {
            let name = provider.rawValue
            retries[provider] = CoreMetrics.Counter(label: "notifiable_delivery_retries_total", dimensions: [("provider", name)], factory: factory)
            invalidations[provider] = CoreMetrics.Counter(label: "notifiable_token_invalidations_total", dimensions: [("provider", name)], factory: factory)
            for sandbox in [false, true] {
                gatewayDurations[DurationKey(provider: provider, sandbox: sandbox)] = CoreMetrics.Timer(
                    label: Self.gatewayDurationLabel, dimensions: [("provider", name), ("mode", sandbox ? "sandbox" : "live")], factory: factory
                )
            }
        }
        self.retries = retries
        self.invalidations = invalidations
        self.gatewayDurations = gatewayDurations
        self.leaseRescues = CoreMetrics.Counter(label: "notifiable_queue_lease_rescues_total", factory: factory)
        self.expired = CoreMetrics.Counter(label: "notifiable_queue_expired_total", factory: factory)
    }

    /// Counts nothing.
    public static var disabled: DeliveryMetrics { DeliveryMetrics(factory: NOOPMetricsHandler.instance) }

    func attempted(appID: Int64, provider: Provider, attempt: Int, outcome: Outcome) {
        let key = OutcomeKey(appID: appID, provider: provider, outcome: outcome)
        let counter = outcomes.counters.withLock { counters in
            if let known = counters[key] { return known }
            let made = CoreMetrics.Counter(
                label: "notifiable_deliveries_total",
                dimensions: [("app_id", String(appID)), ("provider", provider.rawValue), ("outcome", outcome.rawValue)], factory: factory
            )
            counters[key] = made
            return made
        }
        counter.increment()
        if attempt > 1 { retries[provider]?.increment() }
    }

    func gatewayRequest(provider: Provider, sandbox: Bool, took duration: Duration) {
        let (seconds, attoseconds) = duration.components
        gatewayDurations[DurationKey(provider: provider, sandbox: sandbox)]?.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    func tokenInvalidated(provider: Provider) {
        invalidations[provider]?.increment()
    }

    func maintained(rescued: Int, expired: Int) {
        if rescued > 0 { leaseRescues.increment(by: rescued) }
        if expired > 0 { self.expired.increment(by: expired) }
    }
}
