import Foundation

/// A notification is stateful when it keeps, for each targeted user, a copy with read and
/// action state that all the user's devices share, until `expiresAt`.
public struct StatefulOptions: Sendable, Equatable {
    public var expiresAt: Date

    public init(expiresAt: Date) {
        self.expiresAt = expiresAt
    }

    /// How long a user's copy lives unless the request says otherwise, and at most.
    public static let defaultLifetime: TimeInterval = 30 * 24 * 3600
    public static let maximumLifetime: TimeInterval = 30 * 24 * 3600
    public static let minimumLifetime: TimeInterval = 60

    /// `"stateful": true`, `false`, or `{"expires_at": …}` / `{"ttl_seconds": …}`.
    static func read(from reader: NotificationFieldReader, now: Date) throws(ValidationError) -> StatefulOptions? {
        guard let member = reader.member("stateful") else { return nil }
        switch member.value {
        case .bool(false):
            return nil
        case .bool(true):
            return StatefulOptions(expiresAt: now.addingTimeInterval(defaultLifetime))
        case .object(let fields):
            let nested = NotificationFieldReader(object: fields, prefix: member.path + ".")
            try nested.refuseUnknownKeys(["expires_at", "ttl_seconds"], in: "stateful")
            let expiry = try NotificationContent.readExpiry(nested, now: now).expiresAt ?? now.addingTimeInterval(defaultLifetime)
            // Expiries are kept to the millisecond, so "a minute" may come out a hair short of 60 s.
            guard expiry.timeIntervalSince(now) > minimumLifetime - 1 else {
                throw ValidationError(
                    code: "too_short",
                    message: "Users' copies would expire within a minute; give \(nested.path("expires_at")) at least a minute ahead.",
                    field: nested.member("ttl_seconds") != nil ? nested.path("ttl_seconds") : nested.path("expires_at")
                )
            }
            guard expiry.timeIntervalSince(now) <= maximumLifetime else {
                throw ValidationError(
                    code: "too_far_ahead",
                    message: "\(nested.path("expires_at")) is more than 30 days ahead; users keep a stateful notification at most 30 days.",
                    field: nested.path("expires_at")
                )
            }
            return StatefulOptions(expiresAt: expiry)
        default:
            throw NotificationFieldReader.typeError(
                member.path, expected: "true, false, or an object such as {\"expires_at\": \"2026-12-01T00:00:00Z\"}", got: member.value
            )
        }
    }
}
