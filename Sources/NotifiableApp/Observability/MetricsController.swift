import Hummingbird
import Logging
import NIOCore
import NotifiableStore
import PostgresNIO

/// `GET /metrics`: the process's metrics in Prometheus's text format (version 0.0.4), queue
/// gauges refreshed first when their sample is stale. With a token configured
/// (NOTIFIABLE_METRICS_TOKEN) it answers only `Authorization: Bearer <token>`, as Prometheus's
/// `authorization` scrape setting sends it: app ids, queue depths and error rates are not for
/// whoever can reach the port.
struct MetricsController {
    let metrics: ServiceMetrics
    let queueGauges: QueueGauges

    /// `/metrics` as the API and a worker's metrics port both serve it.
    static func addRoutes(
        to router: Router<NotifiableRequestContext>, _ configuration: ServerConfiguration, postgres: Database, logger: Logger,
        throttle: SignInThrottle
    ) {
        let controller = MetricsController(
            metrics: configuration.metrics,
            queueGauges: QueueGauges(
                queue: QueueAdminStore(client: postgres, logger: logger), interval: configuration.queueMetricsInterval,
                factory: configuration.metrics.factory
            )
        )
        if let token = configuration.metricsToken {
            controller.addRoutes(
                to: router.group().add(
                    middleware: BearerTokenMiddleware.metrics(
                        token: token, throttle: throttle, trustedProxies: configuration.trustedProxies
                    )))
        } else {
            controller.addRoutes(to: router)
        }
    }

    func addRoutes(to router: some RouterMethods<NotifiableRequestContext>) {
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
