import NotifiableCore

/// Why a sender has no connection to its gateway for an app, as the sender's per-app cache found.
enum MissingConnection: Error, Sendable, Equatable {
    /// The app has no settings for the gateway.
    case notConfigured
    /// The settings cannot work (a key or CA that does not parse): the app is misconfigured.
    case unusable(String)
    /// The settings could not be read just now (the database): try again later.
    case unavailable(String)

    /// What a delivery comes to without a connection; `notConfigured` tells operators how to configure
    /// the gateway.
    func outcome(notConfigured: String) -> DeliveryOutcome {
        switch self {
        case .notConfigured: .misconfigured(reason: notConfigured)
        case .unusable(let reason): .misconfigured(reason: reason)
        case .unavailable(let reason): .retry(reason: reason, retryAfter: .seconds(5))
        }
    }

    /// Whether an app's settings, loaded at `loadedAt`, may still be used: for `maxAge`, but a
    /// configuration the gateway refused is looked at again within two seconds, so that an operator
    /// fixing it does not have to wait out the usual cache age.
    static func settingsAreFresh(loadedAt: ContinuousClock.Instant, refused: Bool, maxAge: Duration) -> Bool {
        loadedAt.duration(to: .now) < (refused ? min(maxAge, .seconds(2)) : maxAge)
    }
}
