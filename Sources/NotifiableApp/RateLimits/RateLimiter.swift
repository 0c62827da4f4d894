import CoreMetrics
import Foundation
import NotifiableCore
import Synchronization

/// Keeps each credential and each app within its `RateLimits`, in memory: no database write per
/// request. Several API processes keep a limit together by each holding an equal share of it
/// (`share`, from `APIProcessRoster`): with the load spread evenly they admit the whole limit
/// between them, and not more, save that each process admits at least one request at once (a
/// limit smaller than the number of processes lets each of them through once).
final class RateLimiter: Sendable {
    private enum Scope: Hashable {
        case credential(String)
        /// A user acting with a user token (`/api/v1/me`), held to a credential's limits.
        case user(appID: Int64, alias: String)
        case app(Int64)

        var label: String {
            switch self {
            case .credential: "credential"
            case .user: "user"
            case .app: "app"
            }
        }
    }

    private struct Key: Hashable {
        let action: RateLimitedAction
        let scope: Scope
    }

    let limits: RateLimits
    private let share: @Sendable () -> Double
    private let clock: @Sendable () -> Double
    private let factory: any MetricsFactory
    private let buckets = Mutex<[Key: TokenBucket]>([:])

    init(
        limits: RateLimits, share: @escaping @Sendable () -> Double, factory: any MetricsFactory,
        // Monotonic: a wall clock stepped back would stall refills while Retry-After promised less.
        clock: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }
    ) {
        self.limits = limits
        self.share = share
        self.clock = clock
        self.factory = factory
    }

    /// Admits one `action` by `caller`, or throws 429 with the seconds until the tighter of its
    /// credential's and its app's limits admits one. A refused request takes nothing from either.
    /// On every limited request: two dictionary lookups under a lock, nothing allocated.
    func admit(_ action: RateLimitedAction, by caller: Caller, count: Int = 1) throws(APIError) {
        try admit(action, individually: .credential(caller.accessID), appID: caller.appID, count: count)
    }

    /// Admits one `action` by a user acting with a user token: the user has a credential's
    /// allowance of its own, and counts against the app's with everyone else.
    func admit(_ action: RateLimitedAction, by user: VerifiedUser) throws(APIError) {
        try admit(action, individually: .user(appID: user.appID, alias: user.alias), appID: user.appID)
    }

    private func admit(_ action: RateLimitedAction, individually individual: Scope, appID: Int64, count: Int = 1) throws(APIError) {
        let credentialLimit = limits.perCredential[action]
        let appLimit = limits.perApp[action]
        guard credentialLimit != nil || appLimit != nil else { return }
        let (share, now) = (share(), clock())
        let credentialKey = Key(action: action, scope: individual)
        let appKey = Key(action: action, scope: .app(appID))
        let refusal: (seconds: Double, scope: String)? = buckets.withLock { buckets in
            var credentialBucket: TokenBucket?
            if let limit = credentialLimit {
                var bucket = buckets[credentialKey] ?? TokenBucket(limit: limit, share: share, now: now)
                if let wait = bucket.take(count: count, limit: limit, share: share, now: now) { return (wait, individual.label) }
                credentialBucket = bucket
            }
            if let limit = appLimit {
                var bucket = buckets[appKey] ?? TokenBucket(limit: limit, share: share, now: now)
                if let wait = bucket.take(count: count, limit: limit, share: share, now: now) { return (wait, "app") }
                buckets[appKey] = bucket
            }
            if let credentialBucket { buckets[credentialKey] = credentialBucket }
            return nil
        }
        guard let refusal else { return }
        guard refusal.seconds.isFinite else {
            throw APIError(
                status: .unprocessableContent, code: "over_rate_limit",
                message: "\(count) \(action.rawValue) at once is more than this \(refusal.scope)'s limit allows at any moment; "
                    + "send them in smaller batches (the limits are set by NOTIFIABLE_RATE_LIMIT_* on the server).")
        }
        CoreMetrics.Counter(
            label: "notifiable_rate_limited_total",
            dimensions: [("action", action.rawValue), ("scope", refusal.scope), ("app", String(appID))], factory: factory
        ).increment()
        throw .rateLimited(action, scope: refusal.scope, retryAfter: max(1, Int(refusal.seconds.rounded(.up))))
    }
}

extension APIError {
    static func rateLimited(_ action: RateLimitedAction, scope: String, retryAfter seconds: Int) -> APIError {
        var error = APIError(
            status: .tooManyRequests, code: "rate_limited",
            message: "Too many \(action.rawValue) for this \(scope) just now; "
                + "retry after \(seconds) s (Retry-After). The limits are set by NOTIFIABLE_RATE_LIMIT_* on the server."
        )
        error.headers[.retryAfter] = String(seconds)
        return error
    }
}
