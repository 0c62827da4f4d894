import CoreMetrics

/// What the webhook worker counts: `notifiable_webhook_batches_total{outcome}` (`delivered`,
/// `failed`) and `notifiable_webhooks_paused_total` (webhooks paused after failing too often in a
/// row, which stop sending until an operator resumes them).
public struct WebhookMetrics: Sendable {
    private let delivered: CoreMetrics.Counter
    private let failed: CoreMetrics.Counter
    private let paused: CoreMetrics.Counter

    public init(factory: any MetricsFactory) {
        delivered = CoreMetrics.Counter(label: "notifiable_webhook_batches_total", dimensions: [("outcome", "delivered")], factory: factory)
        failed = CoreMetrics.Counter(label: "notifiable_webhook_batches_total", dimensions: [("outcome", "failed")], factory: factory)
        paused = CoreMetrics.Counter(label: "notifiable_webhooks_paused_total", factory: factory)
    }

    /// Counts nothing.
    public static var disabled: WebhookMetrics { WebhookMetrics(factory: NOOPMetricsHandler.instance) }

    func sent(delivered wasDelivered: Bool) {
        (wasDelivered ? delivered : failed).increment()
    }

    func pausedWebhook() {
        paused.increment()
    }
}
