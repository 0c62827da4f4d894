import Hummingbird
import NotifiableCore

/// Routes that take `Authorization: Bearer <token>`: `/metrics`, when NOTIFIABLE_METRICS_TOKEN is
/// set (the admin API takes operators' keys too: `AdminAccessMiddleware`). A client that keeps
/// guessing is refused for a while (`SignInThrottle`), whichever token it guesses.
struct BearerTokenMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext
    /// Nil: the routes are closed (the admin API without a token).
    let token: String?
    /// The variable that sets it, named in the answers.
    let variable: String
    /// What the token is for, in codes (`invalid_<purpose>_token`) and the throttle's log.
    let purpose: String
    let throttle: SignInThrottle
    let trustedProxies: Set<String>

    static func metrics(token: String, throttle: SignInThrottle, trustedProxies: Set<String>) -> Self {
        Self(token: token, variable: "NOTIFIABLE_METRICS_TOKEN", purpose: "metrics", throttle: throttle, trustedProxies: trustedProxies)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let token else {
            throw APIError(
                status: .forbidden, code: "\(purpose)_disabled",
                message: "\(purpose.capitalized) endpoints are closed: start the server with \(variable) set."
            )
        }
        let client = ClientOrigin.of(request, context: context, trustedProxies: trustedProxies).address
        if let wait = throttle.retryAfter(client) { throw APIError.tooManyFailedAttempts(retryAfter: wait) }
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            throw APIError.unauthorized("missing_authorization", "Send Authorization: Bearer <\(variable)>.")
        }
        guard APIAuth.constantTimeEquals(String(header.dropFirst("Bearer ".count)), token) else {
            throttle.failed(client, logger: context.logger, what: "\(purpose) token")
            throw APIError.unauthorized("invalid_\(purpose)_token", "The \(purpose) token is wrong: send Authorization: Bearer <\(variable)>.")
        }
        return try await next(request, context)
    }
}
