import Foundation
import NotifiableCore

/// An OAuth2 access token as a token endpoint grants it.
public struct FCMAccessToken: Sendable, Equatable {
    public var value: String
    /// `expires_in`: how long the token is valid from when it was asked for.
    public var lifetime: Duration

    public init(value: String, lifetime: Duration) {
        self.value = value
        self.lifetime = lifetime
    }
}

/// Why no access token could be had.
public enum FCMAccessTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The token endpoint refused the service account (revoked or deleted key, disabled account, wrong
    /// `token_uri`): the app's FCM configuration is wrong, and asking again will not help.
    case misconfigured(String)
    /// The token endpoint could not be reached or failed (5xx, 429, timeout): try again later.
    case unavailable(String, retryAfter: Duration?)

    public var description: String {
        switch self {
        case .misconfigured(let reason), .unavailable(let reason, _): reason
        }
    }
}

/// One service account's access token, shared by every request for the app.
///
/// A token is reused until shortly before it expires, a minute before or, for tokens that live less than
/// ten minutes, when a tenth of the lifetime is left. Exchanges are single-flight: however many callers
/// find the cache empty or stale at once, one exchange runs and all of them wait for it. A refused
/// exchange is remembered for `failureCooldown`, so a burst of deliveries for an app whose key was revoked
/// costs one exchange rather than one each.
public actor FCMAccessTokens {
    /// Trades the service account's assertion for a token (the token endpoint, or a stand-in).
    public typealias Exchange = @Sendable () async throws(FCMAccessTokenError) -> FCMAccessToken

    private struct Issued {
        let value: String
        let expiresAt: Date
        let refreshAt: Date
    }

    private let exchange: Exchange
    private let now: @Sendable () -> Date
    private let failureCooldown: TimeInterval
    private var current: Issued?
    private var inFlight: Task<Result<Issued, FCMAccessTokenError>, Never>?
    private var refusal: (error: FCMAccessTokenError, until: Date)?

    public init(
        exchange: @escaping Exchange, now: @escaping @Sendable () -> Date = { Date() }, failureCooldown: Duration = .seconds(10)
    ) {
        self.exchange = exchange
        self.now = now
        self.failureCooldown = failureCooldown.seconds
    }

    /// The token to send with: the cached one while it is fresh, else a new one.
    public func token() async throws(FCMAccessTokenError) -> String {
        if let current, now() < current.refreshAt { return current.value }
        if let refusal, now() < refusal.until { throw refusal.error }
        switch await (inFlight ?? startExchange()).value {
        case .success(let issued):
            return issued.value
        case .failure(let error):
            // A passing failure of the endpoint need not stop sending while the old token still works.
            if case .unavailable = error, let current, now() < current.expiresAt { return current.value }
            throw error
        }
    }

    /// FCM answered 401 to a request carrying `rejected`: drop it and return a new token. When `rejected`
    /// was already replaced (many requests in flight report the same expiry), the newer token is returned
    /// without another exchange.
    public func refresh(rejected: String) async throws(FCMAccessTokenError) -> String {
        if current?.value == rejected { current = nil }
        return try await token()
    }

    private func startExchange() -> Task<Result<Issued, FCMAccessTokenError>, Never> {
        let exchange = self.exchange
        let started = now()
        let task = Task { () -> Result<Issued, FCMAccessTokenError> in
            let result: Result<Issued, FCMAccessTokenError>
            do throws(FCMAccessTokenError) {
                let granted = try await exchange()
                let lifetime = max(0, granted.lifetime.seconds)
                // Counted from when the exchange began, so the token is never thought fresher than it is.
                let expiresAt = started.addingTimeInterval(lifetime)
                result = .success(
                    Issued(
                        value: granted.value, expiresAt: expiresAt, refreshAt: expiresAt.addingTimeInterval(-min(60, lifetime / 10))
                    ))
            } catch {
                result = .failure(error)
            }
            self.settle(result)
            return result
        }
        inFlight = task
        return task
    }

    private func settle(_ result: Result<Issued, FCMAccessTokenError>) {
        inFlight = nil
        switch result {
        case .success(let issued):
            current = issued
            refusal = nil
        case .failure(.misconfigured(let reason)):
            refusal = (.misconfigured(reason), now().addingTimeInterval(failureCooldown))
        case .failure(.unavailable):
            break
        }
    }
}
