import Hummingbird
import Logging
import NotifiableStore
import PostgresNIO

/// The HTTP server of a `notifiable work` process, which serves no API: `GET /metrics` and
/// `GET /health/live` on `port`, so Prometheus can scrape worker processes too. It does not run
/// the PostgreSQL client; the worker's service group does.
public func buildMetricsApplication(
    _ configuration: ServerConfiguration, port: Int, postgres: Database, logger: Logger
) -> some ApplicationProtocol {
    let router = Router(context: NotifiableRequestContext.self)
    router.add(middleware: SecurityHeadersMiddleware())
    router.add(middleware: HTTPMetricsMiddleware(factory: configuration.metrics.factory))
    router.add(middleware: ErrorMiddleware())
    router.get("health/live") { _, _ in JSONResponse(HealthController.Status(status: "ok")) }
    MetricsController.addRoutes(to: router, configuration, postgres: postgres, logger: logger, throttle: SignInThrottle())
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: port), serverName: "NotifiableServer"),
        logger: logger
    )
}
