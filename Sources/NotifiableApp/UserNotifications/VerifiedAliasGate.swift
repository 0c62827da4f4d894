import Foundation
import HTTPTypes
import Hummingbird
import NotifiableCore
import NotifiableStore

/// Where an app requires verified user aliases, lets a device act for a user only with that
/// user's token. The app's backend (server credentials) is trusted and never needs one.
struct VerifiedAliasGate: Sendable {
    let verifier: UserTokenVerifier

    /// Returns when `caller` may act for `alias` (nil: for no user); throws 403
    /// `user_token_required`, 401 `invalid_user_token` or 403 `user_token_mismatch` otherwise.
    /// `token` is read only when the app asks for one, so apps that do not see no change.
    func admit(_ caller: Caller, actingFor alias: String?, token presented: @autoclosure () throws -> String?) async throws {
        guard caller.role == .device, caller.requiresVerifiedAlias, let alias, !alias.isEmpty else { return }
        guard let token = try presented() else {
            throw APIError(
                status: .forbidden, code: "user_token_required",
                message: "This app requires a verified user alias: to act for \"\(alias)\", send that user's token in the "
                    + "X-Notifiable-User-Token header or as \"user_token\" in the body. The app's backend mints it after its own "
                    + "login with POST /api/v1/users/{alias}/tokens (server credentials).",
                field: DeviceFields.userTokenKey
            )
        }
        let verified = try await verifier.verify(token)
        // Byte for byte, as PostgreSQL compares aliases: Swift's == would take "e\u{301}" for "é".
        guard verified.appID == caller.appID, verified.userAlias.utf8.elementsEqual(alias.utf8) else {
            throw APIError(
                status: .forbidden, code: "user_token_mismatch",
                message: "The user token was minted for another user alias or another app; acting for \"\(alias)\" needs "
                    + "\"\(alias)\"'s token from POST /api/v1/users/{alias}/tokens.",
                field: DeviceFields.userTokenKey
            )
        }
    }

    /// Refuses (403 `reserved_tag`) a device that sets itself a tag naming a user where the app
    /// requires verified aliases: only the backend (server credentials) sets those.
    func admit(_ caller: Caller, tags: FieldUpdate<[String]>) throws {
        guard caller.role == .device, caller.requiresVerifiedAlias, case .set(let tags?) = tags,
            let tag = tags.first(where: DeviceTags.namesAUser)
        else { return }
        throw APIError(
            status: .forbidden, code: "reserved_tag",
            message: "\"\(tag)\" names a user, and this app requires verified user aliases: only the app's backend (server "
                + "credentials) sets tags under \(DeviceTags.userPrefixes.map { "\"\($0)\"" }.joined(separator: " or ")). "
                + "Leave it out, or set it from the backend with PATCH /api/v1/device_tokens/{id}/tags.",
            field: "device_token.tags"
        )
    }

    /// The token a request presents: the header, else the body's `user_token`.
    static func presentedToken(_ request: Request, body: JSONValue? = nil) throws -> String? {
        if let header = request.headers[.notifiableUserToken]?.trimmingCharacters(in: .whitespaces), !header.isEmpty {
            return header
        }
        guard let body else { return nil }
        return try DeviceFields.presentedUserToken(in: body)
    }
}

extension HTTPField.Name {
    static let notifiableUserToken = Self("X-Notifiable-User-Token")!
}
