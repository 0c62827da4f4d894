import Hummingbird

/// The router's responder, with every request run under `DatabaseAvailability.guarding`: one
/// stranded by a database outage is answered 503 with Retry-After instead of never.
struct DatabaseOutageResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context: RequestContext {
    let inner: Inner
    let availability: DatabaseAvailability

    func respond(to request: Request, context: Inner.Context) async throws -> Response {
        try await availability.guarding {
            try await inner.respond(to: request, context: context)
        } stranded: {
            (try? APIError.databaseUnavailable.response(from: request, context: context)) ?? Response(status: .serviceUnavailable)
        }
    }
}
