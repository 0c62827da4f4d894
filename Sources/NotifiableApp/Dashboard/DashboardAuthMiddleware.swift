import Hummingbird

/// Dashboard pages need a signed-in session; without one a browser is sent to the sign-in form.
/// The session's holder goes into the context, where every page asks what it may do.
struct DashboardAuthMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext
    let session: DashboardSession?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let session else { return DashboardPages.closed() }
        guard let cookie = request.cookies[DashboardSession.cookieName]?.value, let holder = try await session.holder(cookie) else {
            return Response(status: .seeOther, headers: [.location: "/dashboard/login"])
        }
        var context = context
        context.consoleOperator = holder
        return try await HTML.$viewer.withValue(holder) {
            // A refusal is a page for the same operator, with their navigation; so is an input the
            // API's own parsers refused (a mangled `cursor` or id in the address).
            do {
                return try await next(request, context)
            } catch let refusal as ConsoleRefusal {
                return try refusal.response(from: request, context: context)
            } catch let error as APIError where error.status.code < 500 {
                return try ConsoleRefusal(status: error.status, message: error.message).response(from: request, context: context)
            }
        }
    }
}
