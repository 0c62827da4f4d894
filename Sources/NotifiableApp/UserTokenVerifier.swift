import Foundation
import NotifiableCore
import NotifiableStore

/// Checks user tokens against the app they name: its current key generation and the master
/// keys that may have derived its signing key.
struct UserTokenVerifier: Sendable {
    let settings: UserTokenSettings
    let keys: MasterKeyring
    let now: @Sendable () -> Date

    /// The verified token; an `APIError` 401 saying what is wrong otherwise.
    func verify(_ text: String) async throws -> UserToken {
        do {
            let claimed = try UserToken.unverified(text)
            guard let policy = try await settings.policy(appID: claimed.appID) else { throw UserTokenError.badSignature }
            let token = try UserToken.verify(text, keys: keys.userTokenKeys(appID: policy.appID, generation: claimed.generation), now: now())
            guard token.generation == policy.generation else { throw UserTokenError.revoked }
            return token
        } catch let error as UserTokenError {
            throw APIError.unauthorized("invalid_user_token", error.description)
        }
    }

    /// A new token for the app's user, living `lifetime` (at most an hour).
    func mint(appID: Int64, userAlias: String, lifetime: TimeInterval) async throws -> UserToken? {
        guard let policy = try await settings.policy(appID: appID) else { return nil }
        let issued = now()
        return UserToken(
            appID: appID, userAlias: userAlias, generation: policy.generation, issuedAt: issued,
            expiresAt: issued.addingTimeInterval(min(lifetime, UserToken.maximumLifetime))
        )
    }

    func signed(_ token: UserToken) -> String {
        token.signed(with: keys.current.userTokenKey(appID: token.appID, generation: token.generation))
    }
}
