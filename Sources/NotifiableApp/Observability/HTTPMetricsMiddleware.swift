import CoreMetrics
import Hummingbird
import Synchronization

/// Counts requests and times them by route, method and status:
/// `notifiable_http_requests_total` and `notifiable_http_request_duration_seconds`.
///
/// The route is the pattern the router matched (`/api/v1/device_tokens/{id}`), never the raw
/// path, so ids do not multiply the series; unmatched paths count as `NotFound`.
/// Hummingbird's own `MetricsMiddleware` is not used: it reports through the global
/// `MetricsSystem` only (the tests need a registry per application) and its names
/// (`hb.requests`, `http.route`) are not Prometheus-style.
struct HTTPMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    static var durationLabel: String { "notifiable_http_request_duration_seconds" }

    private let series: HTTPSeries

    init(factory: any MetricsFactory) {
        series = HTTPSeries(factory: factory)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let status: Int
        let response: Response
        do {
            response = try await next(request, context)
            status = Int(response.status.code)
        } catch {
            // Errors become answers further in; one that escapes is answered 500 by Hummingbird.
            let elapsed = ContinuousClock.now - start
            series.record(route: context.endpointPath ?? "NotFound", method: "\(request.method)", status: 500, elapsed: elapsed)
            throw error
        }
        series.record(route: context.endpointPath ?? "NotFound", method: "\(request.method)", status: status, elapsed: ContinuousClock.now - start)
        return response
    }
}

/// The request counters and timers made so far, one pair per (route, method, status); a
/// handful of routes and statuses keep this small.
private final class HTTPSeries: Sendable {
    private struct Key: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    private struct Pair: Sendable {
        let count: CoreMetrics.Counter
        let duration: CoreMetrics.Timer
    }

    private let factory: any MetricsFactory
    private let made = Mutex<[Key: Pair]>([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    func record(route: String, method: String, status: Int, elapsed: Duration) {
        let key = Key(route: route, method: method, status: status)
        let pair = made.withLock { made in
            if let pair = made[key] { return pair }
            let dimensions = [("route", route), ("method", method), ("status", String(status))]
            let pair = Pair(
                count: CoreMetrics.Counter(label: "notifiable_http_requests_total", dimensions: dimensions, factory: factory),
                duration: CoreMetrics.Timer(
                    label: HTTPMetricsMiddleware<NotifiableRequestContext>.durationLabel, dimensions: dimensions, factory: factory
                )
            )
            made[key] = pair
            return pair
        }
        pair.count.increment()
        pair.duration.recordNanoseconds(elapsed.nanoseconds)
    }
}
