import Foundation
import NotifiableCore
import NotifiableStore

/// Checks user tokens against the app they name: its current key generation and the master
/// keys that may have derived its signing key.
struct UserTokenVerifier: Sendable {
    let settings: UserTokenSettingsStore
    let keys: MasterKeyring
    let now: @Sendable () -> Date

    /// The verified token; an `APIError` 401 saying what is wrong otherwise.
    func verify(_ text: String) async throws -> UserToken {
        do {
            // The signature first: its key derives from the claims alone, so a forged or expired
            // token is refused without a database read. Then whether its generation still stands.
            let claimed = try UserToken.unverified(text)
            let token = try UserToken.verify(text, keys: keys.userTokenKeys(appID: claimed.appID, generation: claimed.generation), now: now())
            guard let policy = try await settings.policy(appID: token.appID) else { throw UserTokenError.badSignature }
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
