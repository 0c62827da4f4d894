import Foundation

extension NotificationContent {
    /// How long a gateway that stores messages for offline devices (FCM's `ttl`, Web Push's `TTL`)
    /// keeps this one: 0 for a now-or-never notification, else the seconds until it expires, rounded
    /// down, within 0…28 days; nil when it does not expire.
    public func secondsToLive(now: Date) -> Int64? {
        if nowOrNever { return 0 }
        guard let expiresAt else { return nil }
        let seconds = expiresAt.timeIntervalSince(now).rounded(.down)
        guard seconds > 0 else { return 0 }
        return seconds >= Double(NotificationRequest.maxTTLSeconds) ? NotificationRequest.maxTTLSeconds : Int64(seconds)
    }
}
