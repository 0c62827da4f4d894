import HTTPTypes
import Hummingbird
import Logging

/// Gives each request an id and logs one line per request, after it is answered, with its
/// status and duration (numbers), the app it was signed for and the error code of a refusal.
/// The id comes from the caller's `X-Request-Id` when that is safe to log (see
/// `RequestIdentifier`), otherwise it is new; it is echoed in the answer's `X-Request-Id` and
/// carried as `request_id` by every line logged while handling the request, as are the W3C
/// `traceparent`'s `trace_id` and `parent_id` when the caller sends one.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext
    static var requestIDField: HTTPField.Name { HTTPField.Name(RequestIdentifier.headerName)! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let requestID = RequestIdentifier.accept(request.headers[Self.requestIDField])
        var context = context
        // Hummingbird's own counter would be a second, less useful id. (Its `context.id` reads
        // that key, so it is not available here: read `request_id` from the logger instead.)
        context.logger[metadataKey: "hb.request.id"] = nil
        context.logger[metadataKey: "request_id"] = .string(requestID)
        if let trace = TraceParent(request.headers[.traceparent]) {
            context.logger[metadataKey: "trace_id"] = .string(trace.traceID)
            context.logger[metadataKey: "parent_id"] = .string(trace.parentID)
        }
        var response = try await next(request, context)
        response.headers[Self.requestIDField] = requestID
        var metadata: Logger.Metadata = [
            "method": "\(request.method)",
            "path": "\(Self.loggedPath(request.uri.path))",
            "status": .stringConvertible(Int(response.status.code)),
            "ms": .stringConvertible(Self.milliseconds(ContinuousClock.now - start)),
        ]
        if let appID = context.logFacts.appID { metadata["app_id"] = .stringConvertible(appID) }
        if let code = context.logFacts.errorCode { metadata["error_code"] = .string(code) }
        context.logger.info("request", metadata: metadata)
        return response
    }

    /// The path as logged: a user alias in it (`/api/v1/users/:alias/…`) names a person, and an
    /// erasure cannot reach the log store, so it is written as `:alias`.
    static func loggedPath(_ path: String) -> String {
        var parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count > 4, parts[1] == "api", parts[2] == "v1", parts[3] == "users" else { return path }
        parts[4] = ":alias"
        return parts.joined(separator: "/")
    }

    /// Milliseconds with one decimal.
    static func milliseconds(_ elapsed: Duration) -> Double {
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        return (milliseconds * 10).rounded() / 10
    }
}
