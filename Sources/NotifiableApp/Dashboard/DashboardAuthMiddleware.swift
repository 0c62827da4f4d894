import Hummingbird

/// Dashboard pages need a signed-in session; without one a browser is sent to the sign-in form.
/// State-changing requests must also carry the session's CSRF token.
struct DashboardAuthMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext
    let session: DashboardSession?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let session else { return DashboardPages.closed() }
        guard let cookie = request.cookies[DashboardSession.cookieName]?.value, try await session.isValid(cookie) else {
            return Response(status: .seeOther, headers: [.location: "/dashboard/login"])
        }
        return try await next(request, context)
    }
}
