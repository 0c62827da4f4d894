import Foundation
import Hummingbird
import NotifiableCore

/// Minting user tokens: the app's backend vouches that a request acts for one of its users.
struct UserTokensController {
    let verifier: UserTokenVerifier

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>) {
        group.post("users/:alias/tokens", use: mint)
    }

    struct TokenJSON: Encodable, Sendable {
        let token: String
        let userAlias: String
        let expiresAt: String

        enum CodingKeys: String, CodingKey {
            case token
            case userAlias = "user_alias"
            case expiresAt = "expires_at"
        }
    }

    /// `{"ttl_seconds": 600}` (optional; 60 to 3600, default 3600) → 201 with the token.
    @Sendable func mint(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<TokenJSON> {
        let caller = try context.requireServerCaller()
        let alias = try context.pathUserAlias()
        var request = request
        let body = try await request.jsonBody(context: context)
        guard let fields = body.objectValue else {
            throw APIError(status: .unprocessableContent, code: "invalid_body", message: "Send a JSON object, such as {\"ttl_seconds\": 600}, or no body.")
        }
        if let unknown = fields.keys.sorted().first(where: { $0 != "ttl_seconds" }) {
            throw APIError(
                status: .unprocessableContent, code: "unknown_field", message: "\(unknown) is not a field here; only ttl_seconds is.", field: unknown)
        }
        let maximum = Int64(UserToken.maximumLifetime)
        var lifetime = maximum
        switch fields["ttl_seconds"] {
        case nil, .null?: break
        case .integer(let seconds)? where (60...maximum).contains(seconds): lifetime = seconds
        default:
            throw APIError(
                status: .unprocessableContent, code: "invalid_ttl",
                message: "ttl_seconds must be a whole number of seconds from 60 to \(maximum).", field: "ttl_seconds"
            )
        }
        guard let token = try await verifier.mint(appID: caller.appID, userAlias: alias, lifetime: TimeInterval(lifetime)) else {
            throw APIError.notFound("This app no longer exists.")
        }
        return JSONResponse(
            TokenJSON(token: verifier.signed(token), userAlias: alias, expiresAt: Timestamp.iso8601(token.expiresAt)), status: .created
        )
    }
}
