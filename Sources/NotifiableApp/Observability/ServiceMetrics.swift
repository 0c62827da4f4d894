import CoreMetrics
import NotifiableDelivery
import Prometheus

/// One process's metrics: a Prometheus registry, and the swift-metrics factory that fills it.
///
/// Each `ServerConfiguration` carries its own, so every application built in one process (the
/// tests build many) counts into a registry of its own and `/metrics` shows only its own
/// traffic. `notifiable serve` and `notifiable work` also bootstrap the global `MetricsSystem`
/// with this factory, so metrics that libraries report through swift-metrics land in the same
/// registry.
public struct ServiceMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    public let factory: PrometheusMetricsFactory

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = [
            HTTPMetricsMiddleware<NotifiableRequestContext>.durationLabel: Self.httpBuckets,
            DeliveryMetrics.gatewayDurationLabel: Self.gatewayBuckets,
        ]
        self.factory = factory
        // The release, as a gauge that is always 1 (the Prometheus convention for build info).
        Gauge(label: "notifiable_build_info", dimensions: [("version", BuildInfo.version)], factory: factory).record(1)
    }

    /// API answers: mostly a few milliseconds; the slow end is database trouble.
    static let httpBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    /// One push: tens of milliseconds to APNs and FCM, up to the request deadline (15 s by default).
    static let gatewayBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(15), .seconds(30),
    ]

    /// The registry in Prometheus's text exposition format, then the process's own metrics,
    /// every family with its help text (`MetricHelp`, the one place help is added).
    public func exposition() -> [UInt8] {
        MetricHelp.adding(to: registry.emitToBuffer() + Array(ProcessMetrics.exposition().utf8))
    }
}
