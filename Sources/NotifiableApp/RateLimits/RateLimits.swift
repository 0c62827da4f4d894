import NotifiableCore

/// The configured limits: per credential, and per app (all of an app's credentials together, so
/// rotating in more credentials does not raise the ceiling). An action without a limit is not
/// limited.
public struct RateLimits: Sendable, Equatable {
    public var perCredential: [RateLimitedAction: RateLimit]
    public var perApp: [RateLimitedAction: RateLimit]

    public init(perCredential: [RateLimitedAction: RateLimit], perApp: [RateLimitedAction: RateLimit]) {
        self.perCredential = perCredential
        self.perApp = perApp
    }

    /// Far above what the Notifiable SDKs send and the benchmarks measure (registrations peak near
    /// 7,000/s on one machine), so only a runaway client meets them: they keep it from filling
    /// the queue or starving registration for every other app.
    public static let defaults = RateLimits(
        perCredential: [
            .registrations: RateLimit(count: 20_000, periodSeconds: 1),
            .sends: RateLimit(count: 2_000, periodSeconds: 1),
            .events: RateLimit(count: 20_000, periodSeconds: 1),
        ],
        perApp: [
            .registrations: RateLimit(count: 40_000, periodSeconds: 1),
            .sends: RateLimit(count: 4_000, periodSeconds: 1),
            .events: RateLimit(count: 40_000, periodSeconds: 1),
        ]
    )

    /// The variable that sets `action`'s limit per credential, or per app.
    static func variable(_ action: RateLimitedAction, perApp: Bool) -> String {
        "NOTIFIABLE_RATE_LIMIT_\(action.rawValue.uppercased())\(perApp ? "_PER_APP" : "")"
    }
}
