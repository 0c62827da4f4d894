import Hummingbird
import NotifiableCore

/// Admin endpoints take `Authorization: Bearer $NOTIFIABLE_ADMIN_TOKEN`; without a configured
/// token they are closed. A client that keeps guessing is refused for a while (`SignInThrottle`).
struct AdminAuthMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext
    let token: String?
    let throttle: SignInThrottle
    let trustedProxies: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let token else {
            throw APIError(status: .forbidden, code: "admin_disabled", message: "Admin endpoints are closed: start the server with NOTIFIABLE_ADMIN_TOKEN set.")
        }
        let client = ClientOrigin.of(request, context: context, trustedProxies: trustedProxies).address
        if let wait = throttle.retryAfter(client) { throw APIError.tooManyFailedAttempts(retryAfter: wait) }
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            throw APIError.unauthorized("missing_authorization", "Send Authorization: Bearer <NOTIFIABLE_ADMIN_TOKEN>.")
        }
        guard APIAuth.constantTimeEquals(String(header.dropFirst("Bearer ".count)), token) else {
            throttle.failed(client, logger: context.logger, what: "admin token")
            throw APIError.unauthorized("invalid_admin_token", "The admin token is wrong.")
        }
        return try await next(request, context)
    }
}
