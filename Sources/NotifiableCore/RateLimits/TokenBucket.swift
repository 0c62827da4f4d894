/// One caller's allowance under a `RateLimit`, of which this process holds `share` (a fraction:
/// with N processes answering, each keeps 1/N of the limit, so together they keep it whole).
/// Pure: time is passed in, in seconds.
public struct TokenBucket: Sendable, Equatable {
    private var tokens: Double
    private var updatedAt: Double

    /// Starts full: a caller gets its whole burst at once.
    public init(limit: RateLimit, share: Double, now: Double) {
        tokens = Self.capacity(limit, share: share)
        updatedAt = now
    }

    /// Never less than one token, or a small limit shared by many processes would refuse every request.
    static func capacity(_ limit: RateLimit, share: Double) -> Double {
        max(1, Double(limit.count) * share)
    }

    /// Takes one token when there is one; otherwise the seconds until there will be.
    public mutating func take(limit: RateLimit, share: Double, now: Double) -> Double? {
        take(count: 1, limit: limit, share: share, now: now)
    }

    /// Takes `count` tokens at once (a batch of sends counts each), or nothing and the seconds until
    /// there will be enough: `infinity` when `count` is more than the whole allowance, which no
    /// wait admits.
    public mutating func take(count: Int, limit: RateLimit, share: Double, now: Double) -> Double? {
        let capacity = Self.capacity(limit, share: share)
        let rate = limit.perSecond * share
        tokens = min(capacity, tokens + max(0, now - updatedAt) * rate)
        updatedAt = max(updatedAt, now)
        let needed = Double(max(count, 1))
        guard needed <= capacity else { return .infinity }
        guard tokens < needed else {
            tokens -= needed
            return nil
        }
        return (needed - tokens) / rate
    }
}
