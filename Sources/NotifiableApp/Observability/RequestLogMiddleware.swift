import HTTPTypes
import Hummingbird
import Logging

/// Gives each request an id and logs one line per request, after it is answered, with its
/// status and duration. The id comes from the caller's `X-Request-Id` when that is safe to log
/// (see `RequestIdentifier`), otherwise it is new; it is echoed in the answer's `X-Request-Id`
/// and carried as `request_id` by every line logged while handling the request.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    static var requestIDField: HTTPField.Name { HTTPField.Name(RequestIdentifier.headerName)! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let requestID = RequestIdentifier.accept(request.headers[Self.requestIDField])
        var context = context
        // Hummingbird's own counter would be a second, less useful id. (Its `context.id` reads
        // that key, so it is not available here: read `request_id` from the logger instead.)
        context.logger[metadataKey: "hb.request.id"] = nil
        context.logger[metadataKey: "request_id"] = .string(requestID)
        var response = try await next(request, context)
        response.headers[Self.requestIDField] = requestID
        context.logger.info("request", metadata: [
            "method": "\(request.method)",
            "path": "\(request.uri.path)",
            "status": "\(response.status.code)",
            "ms": "\(Self.milliseconds(ContinuousClock.now - start))",
        ])
        return response
    }

    /// Milliseconds with one decimal.
    static func milliseconds(_ elapsed: Duration) -> Double {
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        return (milliseconds * 10).rounded() / 10
    }
}
