import CoreMetrics
import Foundation
import NotifiableCore
import Synchronization

/// Keeps each credential and each app within its `RateLimits`, in memory: no database write per
/// request. Several API processes keep a limit together by each holding an equal share of it
/// (`share`, from `APIProcessRoster`): with the load spread evenly they admit the whole limit
/// between them, and never more.
final class RateLimiter: Sendable {
    private struct Key: Hashable {
        let action: RateLimitedAction
        /// `credential:<access id>` or `app:<id>`.
        let scope: String
    }

    let limits: RateLimits
    private let share: @Sendable () -> Double
    private let clock: @Sendable () -> Double
    private let factory: any MetricsFactory
    private let buckets = Mutex<[Key: TokenBucket]>([:])

    init(
        limits: RateLimits, share: @escaping @Sendable () -> Double, factory: any MetricsFactory,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.limits = limits
        self.share = share
        self.clock = clock
        self.factory = factory
    }

    /// Admits one `action` by `caller`, or throws 429 with the seconds until the tighter of its
    /// credential's and its app's limits admits one. A refused request takes nothing from either.
    func admit(_ action: RateLimitedAction, by caller: Caller) throws(APIError) {
        let checks = [
            limits.perCredential[action].map { (Key(action: action, scope: "credential:\(caller.accessID)"), $0, "credential") },
            limits.perApp[action].map { (Key(action: action, scope: "app:\(caller.appID)"), $0, "app") },
        ].compactMap { $0 }
        guard !checks.isEmpty else { return }
        let (share, now) = (share(), clock())
        let refusal: (seconds: Double, scope: String)? = buckets.withLock { buckets in
            var taken: [Key: TokenBucket] = [:]
            for (key, limit, scope) in checks {
                var bucket = buckets[key] ?? TokenBucket(limit: limit, share: share, now: now)
                if let wait = bucket.take(limit: limit, share: share, now: now) { return (wait, scope) }
                taken[key] = bucket
            }
            buckets.merge(taken) { _, new in new }
            return nil
        }
        guard let refusal else { return }
        CoreMetrics.Counter(
            label: "notifiable_rate_limited_total",
            dimensions: [("action", action.rawValue), ("scope", refusal.scope), ("app", String(caller.appID))], factory: factory
        ).increment()
        throw .rateLimited(action, scope: refusal.scope, retryAfter: max(1, Int(refusal.seconds.rounded(.up))))
    }
}

extension APIError {
    static func rateLimited(_ action: RateLimitedAction, scope: String, retryAfter seconds: Int) -> APIError {
        var error = APIError(
            status: .tooManyRequests, code: "rate_limited",
            message: "Too many \(action.rawValue) for this \(scope == "app" ? "app" : "credential") just now; "
                + "retry after \(seconds) s (Retry-After). The limits are set by NOTIFIABLE_RATE_LIMIT_* on the server."
        )
        error.headers[.retryAfter] = String(seconds)
        return error
    }
}
