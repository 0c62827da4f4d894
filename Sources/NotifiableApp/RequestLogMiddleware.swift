import Hummingbird
import Logging

/// One log line per request, after it is answered, with its status and duration.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        context.logger.info("request", metadata: [
            "method": "\(request.method)",
            "path": "\(request.uri.path)",
            "status": "\(response.status.code)",
            "ms": "\((milliseconds * 10).rounded() / 10)",
        ])
        return response
    }
}
