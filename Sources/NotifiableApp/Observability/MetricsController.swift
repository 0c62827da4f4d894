import Hummingbird
import NIOCore

/// `GET /metrics`: the process's metrics in Prometheus's text format (version 0.0.4), queue
/// gauges refreshed first when their sample is stale.
struct MetricsController {
    let metrics: ServiceMetrics
    let queueGauges: QueueGauges

    func addRoutes(to router: Router<NotifiableRequestContext>) {
        router.get("metrics") { _, context in
            await queueGauges.refresh(logger: context.logger)
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition()))
            )
        }
    }
}
