import Foundation
import Hummingbird
import NotifiableCore

/// Lets through requests that carry `Authorization: Bearer <user token>` and records the user
/// they act for: the routes behind it act on that user alone.
struct UserTokenMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext

    let verifier: UserTokenVerifier

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            throw APIError.unauthorized(
                "missing_authorization",
                "Send the user's token: Authorization: Bearer <token>, minted by the app's backend with POST /api/v1/users/:alias/tokens."
            )
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw APIError.unauthorized("invalid_authorization", "The Authorization header must be \"Bearer <user token>\".")
        }
        let token = try await verifier.verify(String(parts[1]).trimmingCharacters(in: .whitespaces))
        var context = context
        context.user = VerifiedUser(appID: token.appID, alias: token.userAlias)
        context.logger[metadataKey: "app_id"] = "\(token.appID)"
        return try await next(request, context)
    }
}
