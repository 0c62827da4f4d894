import Crypto
import Foundation
import NotifiableCore

/// The provider authentication token (JWT) shared by every request of one APNs key.
///
/// APNs rejects tokens older than 60 minutes and throttles (`TooManyProviderTokenUpdates`)
/// providers that change tokens more often than every 20 minutes, so a token is made once and
/// reused until it is `refreshAfter` old (50 minutes by default), never per request.
public actor APNsTokenCache {
    public nonisolated let keyID: String
    public nonisolated let teamID: String
    private let privateKey: P256.Signing.PrivateKey
    private let now: @Sendable () -> Date
    private let refreshAfter: TimeInterval
    private var current: (token: String, issuedAt: Date)?

    public init(
        keyID: String, teamID: String, privateKey: P256.Signing.PrivateKey,
        now: @escaping @Sendable () -> Date = { Date() }, refreshAfter: Duration = .seconds(50 * 60)
    ) {
        self.keyID = keyID
        self.teamID = teamID
        self.privateKey = privateKey
        self.now = now
        self.refreshAfter = refreshAfter.seconds
    }

    /// The current token; a new one when there is none yet or it is `refreshAfter` old.
    public func token() -> String {
        let time = now()
        if let current, time.timeIntervalSince(current.issuedAt) < refreshAfter {
            return current.token
        }
        return issue(at: time)
    }

    /// APNs answered `ExpiredProviderToken` to a request carrying `rejected`: make a new token,
    /// unless `rejected` has already been replaced (many in-flight requests report the same
    /// expiry; only the first one refreshes).
    public func refresh(rejected: String) {
        guard let current, current.token == rejected else { return }
        issue(at: now())
    }

    /// When the current token was issued, nil before the first `token()`.
    public var issuedAt: Date? { current?.issuedAt }

    @discardableResult
    private func issue(at time: Date) -> String {
        let token = APNsJWT.make(keyID: keyID, teamID: teamID, issuedAt: time, privateKey: privateKey)
        current = (token, time)
        return token
    }
}
