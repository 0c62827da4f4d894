import Foundation

/// When to try a delivery again after a transient failure: exponential backoff with jitter,
/// honouring the gateway's `Retry-After`, up to a number of attempts, never past expiry.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all (the first send included) before giving up.
    public var maxAttempts: Int
    /// Delay after the first failed attempt, before jitter.
    public var baseDelay: Duration
    /// Upper bound of the exponential delay, before jitter.
    public var maxDelay: Duration
    /// Jitter fraction `j`: the delay is multiplied by a random factor in [1 − j, 1 + j].
    /// Clamped to [0, 1].
    public var jitter: Double

    public init(
        maxAttempts: Int = 8, baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(3600),
        jitter: Double = 0.5
    ) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.jitter = jitter
    }

    /// The delay before the next attempt, without jitter: `baseDelay × 2^(attempts − 1)`,
    /// capped at `maxDelay` (`attempts` below 1 counts as 1).
    public func backoff(after attempts: Int) -> Duration {
        let base = max(0, baseDelay.seconds)
        let cap = max(0, maxDelay.seconds)
        let exponent = Double(max(1, attempts) - 1)
        let raw = base * pow(2, exponent)  // may be +inf for large exponents; min() takes care of it
        let capped = raw.isFinite ? min(raw, cap) : cap
        return .nanoseconds(Int64((capped * 1e9).rounded()))
    }

    /// When to attempt a delivery again, after `attempts` attempts (≥ 1) have failed
    /// transiently; nil to give up: `attempts ≥ maxAttempts`, or the next time would be at or
    /// after `expiresAt`.
    ///
    /// The delay is `backoff(after:)` times a random factor in [1 − jitter, 1 + jitter], but
    /// never shorter than `retryAfter` (the gateway's own request is a lower bound, not capped).
    public func nextAttempt(
        after attempts: Int, retryAfter: Duration?, now: Date, expiresAt: Date?,
        random: inout some RandomNumberGenerator
    ) -> Date? {
        guard attempts < maxAttempts else { return nil }
        let spread = min(max(jitter, 0), 1)
        let factor = spread > 0 ? Double.random(in: (1 - spread)...(1 + spread), using: &random) : 1
        var delay = backoff(after: attempts).seconds * factor
        if let retryAfter {
            delay = max(delay, retryAfter.seconds)
        }
        let next = now.addingTimeInterval(delay)
        if let expiresAt, next >= expiresAt { return nil }
        return next
    }

    /// `nextAttempt(after:retryAfter:now:expiresAt:random:)` with the system's random numbers.
    public func nextAttempt(after attempts: Int, retryAfter: Duration?, now: Date, expiresAt: Date?) -> Date? {
        var random = SystemRandomNumberGenerator()
        return nextAttempt(after: attempts, retryAfter: retryAfter, now: now, expiresAt: expiresAt, random: &random)
    }
}
