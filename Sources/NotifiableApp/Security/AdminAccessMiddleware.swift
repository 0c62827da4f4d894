import Hummingbird
import NotifiableCore
import NotifiableStore

/// `Authorization: Bearer …` on the admin API: `NOTIFIABLE_ADMIN_TOKEN` (the break-glass owner key)
/// or an operator's API key, which acts with that operator's role and apps (`AdminAccess`). A client
/// that keeps guessing is refused for a while (`SignInThrottle`).
struct AdminAccessMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext
    let adminToken: String?
    let keys: OperatorKeyStore
    let throttle: SignInThrottle
    let trustedProxies: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let client = ClientOrigin.of(request, context: context, trustedProxies: trustedProxies).address
        if let wait = throttle.retryAfter(client) { throw APIError.tooManyFailedAttempts(retryAfter: wait) }
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            throw APIError.unauthorized("missing_authorization", "Send Authorization: Bearer <an operator's API key or NOTIFIABLE_ADMIN_TOKEN>.")
        }
        let presented = String(header.dropFirst("Bearer ".count))
        var context = context
        if let adminToken, APIAuth.constantTimeEquals(presented, adminToken) {
            context.consoleOperator = .adminToken
        } else {
            switch try await keys.check(presented) {
            case .valid(let holder, let keyID):
                context.consoleOperator = holder
                context.apiKeyID = keyID
            case .revoked:
                throw APIError.unauthorized("revoked_api_key", "This API key was revoked. Ask an owner for a new one.")
            case .expired:
                throw APIError.unauthorized(
                    "expired_api_key", "This API key has expired. Make a new one in the console or with notifiable operators keys create.")
            case .disabled:
                throw APIError.unauthorized("operator_disabled", "This API key's operator is disabled.")
            case .unknown:
                throttle.failed(client, logger: context.logger, what: "admin API key")
                throw APIError.unauthorized(
                    "invalid_admin_token",
                    adminToken == nil
                        ? "No such API key. (The admin token is not set: NOTIFIABLE_ADMIN_TOKEN.)"
                        : "The key is wrong: send an operator's API key or NOTIFIABLE_ADMIN_TOKEN.")
            }
        }
        let requirement = AdminAccess.requirement(
            method: request.method, endpoint: AdminAccess.routeName(context.endpointPath ?? request.uri.path),
            // Read as the handlers read it (`pathID`), so the app checked is the app served.
            pathAppID: context.parameters.get("id") == nil ? nil : try context.pathID("id", what: "app"),
            queryAppID: request.uri.queryParameters["app_id"].flatMap { Int64(String($0)) })
        if case .action(let action) = requirement { try context.requireAdmin(action) }
        return try await next(request, context)
    }
}
