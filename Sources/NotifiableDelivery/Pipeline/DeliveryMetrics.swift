import CoreMetrics
import NotifiableCore
import Synchronization

/// What the worker counts, through swift-metrics: whichever factory it is given (the process's
/// Prometheus registry in `notifiable serve`, a registry of its own in each test).
///
/// - `notifiable_deliveries_total{app_id,provider,outcome}`: one per send attempt's outcome;
///   outcomes exclude each other (a token the gateway called dead, and that was invalidated,
///   counts as `token_invalidated`, not also as `failed`). An app's series all appear, at 0, with
///   its first attempt, so `rate()` sees every first increase; apps are few, devices and users
///   never become labels.
/// - `notifiable_delivery_retries_total{provider}`: sends that were a retry (attempt 2 or later).
/// - `notifiable_gateway_request_duration_seconds{provider,mode}`: time spent in the sender for
///   one push, `mode` `live` or `sandbox` (the built-in fake gateways).
/// - `notifiable_token_invalidations_total{provider}`: devices marked invalid by a gateway's answer.
/// - `notifiable_queue_lease_rescues_total`, `notifiable_queue_expired_total`: deliveries the
///   maintenance loop returned after their worker's lease ran out, or settled dead because their
///   notification expired while they waited.
/// - `notifiable_delivery_unknown_outcomes_total{provider}`: attempts with no answer after the
///   request may have reached the gateway (the only kind that can show a push twice).
/// - `notifiable_queue_given_back_total`: deliveries a lane handed back unsent, their lease not
///   known to outlast a send; `notifiable_queue_late_renewals_total`: lease renewals asked with
///   less than a third of the lease left. Both say the process is starved of CPU.
public struct DeliveryMetrics: Sendable {
    public enum Outcome: String, Sendable, CaseIterable {
        case sent, retrying, failed, dead
        case tokenInvalidated = "token_invalidated"
    }

    public static let gatewayDurationLabel = "notifiable_gateway_request_duration_seconds"

    /// What one attempt counts under.
    struct OutcomeKey: Hashable {
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

    /// The per-app counters, made on an app's first attempt and shared by copies of these metrics.
    private final class OutcomeCounters: Sendable {
        let counters = Mutex<[OutcomeKey: CoreMetrics.Counter]>([:])
    }
    private let retries: [Provider: CoreMetrics.Counter]
    private let invalidations: [Provider: CoreMetrics.Counter]
    private let gatewayDurations: [DurationKey: CoreMetrics.Timer]
    private let leaseRescues: CoreMetrics.Counter
    private let expired: CoreMetrics.Counter
    private let unknownOutcomes: [Provider: CoreMetrics.Counter]
    private let givenBack: CoreMetrics.Counter
    private let lateRenewals: CoreMetrics.Counter

    /// Every series is made up front, so each shows (as 0) from the first scrape and `rate()`
    /// sees its first increase.
    public init(factory: any MetricsFactory) {
        self.factory = factory
        var retries: [Provider: CoreMetrics.Counter] = [:]
        var invalidations: [Provider: CoreMetrics.Counter] = [:]
        var gatewayDurations: [DurationKey: CoreMetrics.Timer] = [:]
        var unknownOutcomes: [Provider: CoreMetrics.Counter] = [:]
        for provider in Provider.allCases {
            let name = provider.rawValue
            unknownOutcomes[provider] = CoreMetrics.Counter(
                label: "notifiable_delivery_unknown_outcomes_total", dimensions: [("provider", name)], factory: factory)
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
        self.unknownOutcomes = unknownOutcomes
        self.givenBack = CoreMetrics.Counter(label: "notifiable_queue_given_back_total", factory: factory)
        self.lateRenewals = CoreMetrics.Counter(label: "notifiable_queue_late_renewals_total", factory: factory)
    }

    /// Counts nothing.
    public static var disabled: DeliveryMetrics { DeliveryMetrics(factory: NOOPMetricsHandler.instance) }

    /// Counts a recorded batch's attempts: how many under each key, how many per provider were
    /// retries and of unknown outcome, and how many deliveries were given back unsent. One lock
    /// per batch, not per delivery.
    func attempted(_ outcomes: [OutcomeKey: Int], retries: [Provider: Int], unknown: [Provider: Int] = [:], givenBack: Int = 0) {
        for (provider, count) in unknown where count > 0 { unknownOutcomes[provider]?.increment(by: count) }
        if givenBack > 0 { self.givenBack.increment(by: givenBack) }
        let counters = self.outcomes.counters.withLock { counters in
            outcomes.map { key, count in (counter(key, in: &counters), count) }
        }
        for (counter, count) in counters { counter.increment(by: count) }
        for (provider, count) in retries where count > 0 { self.retries[provider]?.increment(by: count) }
    }

    /// The counter of `key`, making all of its app's series (every provider and outcome, at 0)
    /// when the app is new.
    private func counter(_ key: OutcomeKey, in counters: inout [OutcomeKey: CoreMetrics.Counter]) -> CoreMetrics.Counter {
        if let known = counters[key] { return known }
        for provider in Provider.allCases {
            for outcome in Outcome.allCases {
                counters[OutcomeKey(appID: key.appID, provider: provider, outcome: outcome)] = CoreMetrics.Counter(
                    label: "notifiable_deliveries_total",
                    dimensions: [("app_id", String(key.appID)), ("provider", provider.rawValue), ("outcome", outcome.rawValue)],
                    factory: factory
                )
            }
        }
        return counters[key]!
    }

    func gatewayRequest(provider: Provider, sandbox: Bool, took duration: Duration) {
        gatewayDurations[DurationKey(provider: provider, sandbox: sandbox)]?.recordNanoseconds(duration.nanoseconds)
    }

    func tokenInvalidated(provider: Provider) {
        invalidations[provider]?.increment()
    }

    func renewedLate() {
        lateRenewals.increment()
    }

    func maintained(rescued: Int, expired: Int) {
        if rescued > 0 { leaseRescues.increment(by: rescued) }
        if expired > 0 { self.expired.increment(by: expired) }
    }
}
