/// At most `count` requests in any `period`, for one caller: a token bucket holding `count`
/// tokens, refilled at `count / period` a second. Written as operators configure it: `100/s`,
/// `6000/min`, `50000/h`, or `off`.
public struct RateLimit: Sendable, Equatable, CustomStringConvertible {
    public let count: Int
    public let periodSeconds: Int

    public init(count: Int, periodSeconds: Int) {
        self.count = count
        self.periodSeconds = periodSeconds
    }

    public var perSecond: Double { Double(count) / Double(periodSeconds) }

    public var description: String {
        switch periodSeconds {
        case 1: "\(count)/s"
        case 60: "\(count)/min"
        case 3600: "\(count)/h"
        default: "\(count)/\(periodSeconds)s"
        }
    }

    /// `N/s`, `N/min` or `N/h` with N from 1; nil for anything else. `off` is the caller's to read.
    public static func parse(_ text: String) -> RateLimit? {
        let parts = text.split(separator: "/", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, let count = Int(parts[0]), count > 0 else { return nil }
        let period: Int? =
            switch parts[1].lowercased() {
            case "s", "sec", "second": 1
            case "min", "minute": 60
            case "h", "hour": 3600
            default: nil
            }
        return period.map { RateLimit(count: count, periodSeconds: $0) }
    }
}

/// What is limited: the calls the SDKs and backends make in volume.
public enum RateLimitedAction: String, Sendable, CaseIterable {
    /// Registering and updating devices (`POST /api/v1/device_tokens`, `PATCH`/`PUT …/:id`).
    case registrations
    /// Creating notifications (`POST /api/v1/notifications`).
    case sends
    /// Delivered and opened reports (`POST /api/v1/notifications/:id/delivered|opened`).
    case events
}
