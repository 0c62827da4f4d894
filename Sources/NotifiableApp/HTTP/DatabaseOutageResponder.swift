import Hummingbird

/// The router's responder, with every request run under `DatabaseAvailability.guarding`: one
/// stranded by a database outage is answered 503 with Retry-After instead of never, and so is one
/// still running at the request deadline (its commit waiting on a synchronous standby that is gone).
struct DatabaseOutageResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context: RequestContext {
    let inner: Inner
    let availability: DatabaseAvailability

    func respond(to request: Request, context: Inner.Context) async throws -> Response {
        try await availability.guarding {
            try await inner.respond(to: request, context: context)
        } stranded: {
            (try? APIError.databaseUnavailable.response(from: request, context: context)) ?? Response(status: .serviceUnavailable)
        } pastDeadline: { [deadline = availability.requestDeadline] in
            context.logger.warning(
                "request still running at its deadline answered 503; it may yet complete",
                metadata: ["method": "\(request.method)", "path": "\(request.uri.path)", "deadline": "\(deadline)"])
            return (try? APIError.requestDeadlineExceeded(deadline).response(from: request, context: context))
                ?? Response(status: .serviceUnavailable)
        }
    }
}
