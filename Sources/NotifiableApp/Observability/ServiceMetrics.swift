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

    /// The registry in Prometheus's text exposition format, every family with its help text,
    /// then the release and the process's own metrics.
    public func exposition() -> [UInt8] {
        var text = MetricHelp.adding(to: registry.emitToBuffer())
        text += Array("""
            # HELP notifiable_build_info \(MetricHelp.texts["notifiable_build_info"] ?? "")
            # TYPE notifiable_build_info gauge
            notifiable_build_info{version="\(BuildInfo.version)"} 1

            """.utf8)
        text += Array(ProcessMetrics.exposition().utf8)
        return text
    }
}
