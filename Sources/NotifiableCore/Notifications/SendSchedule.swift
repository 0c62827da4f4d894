import Foundation

/// When a notification goes out, if not at once.
public enum SendSchedule: Sendable, Equatable {
    /// At one instant, for everyone.
    case at(Date)
    /// At a wall-clock time in each device's own time zone (its `time_zone` property, an IANA
    /// name; UTC where it has none or an unknown one). The date holds that wall-clock time as
    /// if it were UTC.
    case localTime(Date)

    /// How far ahead a send may be scheduled.
    public static let maximumLead: TimeInterval = 30 * 24 * 3600
    /// A `send_at` this little in the past (clock skew) means now.
    public static let pastTolerance: TimeInterval = 300
    /// The widest offsets of real time zones: a wall-clock time comes first at UTC+14 and last
    /// at UTC−12.
    public static let earliestZoneOffset: TimeInterval = 14 * 3600
    public static let latestZoneOffset: TimeInterval = 12 * 3600

    /// The first instant at which some device may be due.
    public var earliestInstant: Date {
        switch self {
        case .at(let date): date
        case .localTime(let wallClock): wallClock.addingTimeInterval(-Self.earliestZoneOffset)
        }
    }

    /// The last instant at which some device may be due.
    public var latestInstant: Date {
        switch self {
        case .at(let date): date
        case .localTime(let wallClock): wallClock.addingTimeInterval(Self.latestZoneOffset)
        }
    }

    /// `send_at` (with `local_time`) from a request.
    static func read(from reader: NotificationFieldReader, now: Date) throws(ValidationError) -> SendSchedule? {
        let local = try reader.bool("local_time") ?? false
        guard let member = reader.member("send_at") else {
            if local {
                throw ValidationError(
                    code: "missing_field", message: "local_time needs send_at: the wall-clock time, such as \"2026-11-23T08:00:00\".",
                    field: reader.path("send_at")
                )
            }
            return nil
        }
        if local {
            guard case .string(let text) = member.value, let seconds = ISO8601Timestamp.localSecondsSince1970(text) else {
                throw ValidationError(
                    code: "invalid_date",
                    message: "With local_time, \(member.path) is a wall-clock date-time without a time zone, such as "
                        + "\"2026-11-23T08:00:00\": each device gets it at that time in its own time zone.",
                    field: member.path
                )
            }
            let wallClock = Date(timeIntervalSince1970: seconds)
            guard wallClock.addingTimeInterval(latestZoneOffset + pastTolerance) > now else {
                throw ValidationError(
                    code: "already_past", message: "\(member.path) has passed in every time zone.", field: member.path
                )
            }
            guard wallClock.addingTimeInterval(-earliestZoneOffset) <= now.addingTimeInterval(maximumLead) else {
                throw tooFarAhead(member.path)
            }
            return .localTime(wallClock)
        }
        let seconds = try member.secondsSince1970(hint: " (or send \"local_time\": true for each device's own time zone)")
        let date = Date(timeIntervalSince1970: seconds)
        guard date > now.addingTimeInterval(-pastTolerance) else {
            throw ValidationError(code: "already_past", message: "\(member.path) is in the past.", field: member.path)
        }
        guard date <= now.addingTimeInterval(maximumLead) else { throw tooFarAhead(member.path) }
        return date > now ? .at(date) : nil
    }

    private static func tooFarAhead(_ path: String) -> ValidationError {
        ValidationError(code: "too_far_ahead", message: "\(path) is more than 30 days ahead; schedule at most 30 days out.", field: path)
    }
}
