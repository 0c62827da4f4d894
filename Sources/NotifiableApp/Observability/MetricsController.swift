import Hummingbird
import NIOCore
import NotifiableCore

/// `GET /metrics`: the process's metrics in Prometheus's text format (version 0.0.4), queue
/// gauges refreshed first when their sample is stale. With a token configured
/// (NOTIFIABLE_METRICS_TOKEN) it answers only `Authorization: Bearer <token>`, as Prometheus's
/// `authorization` scrape setting sends it: app ids, queue depths and error rates are not for
/// whoever can reach the port.
struct MetricsController {
    let metrics: ServiceMetrics
    let queueGauges: QueueGauges
    let token: String?

    func addRoutes(to router: Router<NotifiableRequestContext>) {
        router.get("metrics") { request, context in
            if let token {
                let sent = request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil } ?? ""
                guard APIAuth.constantTimeEquals(sent, token) else {
                    throw APIError.unauthorized("invalid_metrics_token", "Send Authorization: Bearer <NOTIFIABLE_METRICS_TOKEN> to read the metrics.")
                }
            }
            await queueGauges.refresh(logger: context.logger)
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition()))
            )
        }
    }
}
