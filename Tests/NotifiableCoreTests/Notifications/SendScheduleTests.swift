import Foundation
import NotifiableCore
import Testing

@Suite struct SendScheduleTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15T08:00:00Z

    static func parse(_ json: String) throws -> NotificationRequest {
        try NotificationRequest.parse(try JSONValue.decode(Array(json.utf8)), now: now)
    }

    static func error(_ json: String) -> ValidationError? {
        do {
            _ = try parse(json)
            return nil
        } catch { return error as? ValidationError }
    }

    @Test func anInstantOrAWallClockTime() throws {
        #expect(try Self.parse(#"{"title": "x", "all": true, "send_at": "2027-01-15T09:00:00Z"}"#).schedule == .at(Self.now.addingTimeInterval(3600)))
        #expect(try Self.parse(#"{"title": "x", "all": true, "send_at": 1800000060}"#).schedule == .at(Self.now.addingTimeInterval(60)))
        // A moment in the past (clock skew) means now.
        #expect(try Self.parse(#"{"title": "x", "all": true, "send_at": "2027-01-15T07:58:00Z"}"#).schedule == nil)
        let morning = try Self.parse(#"{"title": "x", "all": true, "send_at": "2027-01-16T08:00:00", "local_time": true}"#)
        #expect(morning.schedule == .localTime(Self.now.addingTimeInterval(86400)))
        #expect(morning.schedule?.earliestInstant == Self.now.addingTimeInterval(86400 - 14 * 3600))
        // ttl_seconds counts from the send.
        let later = try Self.parse(#"{"title": "x", "all": true, "send_at": 1800003600, "ttl_seconds": 60}"#)
        #expect(later.content.expiresAt == Self.now.addingTimeInterval(3660))
    }

    @Test func refusalsNameTheField() {
        let cases: [(String, String, String)] = [
            (#""send_at": "2027-01-15T09:00:00""#, "send_at", "invalid_date"),
            (#""send_at": "2027-01-15T07:00:00Z""#, "send_at", "already_past"),
            (#""send_at": "2027-02-15T09:00:00Z""#, "send_at", "too_far_ahead"),
            (#""send_at": true"#, "send_at", "invalid_type"),
            (#""local_time": true"#, "send_at", "missing_field"),
            (#""send_at": "2027-01-16T08:00:00Z", "local_time": true"#, "send_at", "invalid_date"),
            (#""send_at": "2027-01-14T18:00:00", "local_time": true"#, "send_at", "already_past"),
            (#""send_at": "2027-01-16T08:00:00", "local_time": true, "ttl_seconds": 60"#, "ttl_seconds", "conflicting_fields"),
            (#""send_at": "2027-01-15T10:00:00Z", "expires_at": "2027-01-15T09:00:00Z""#, "expires_at", "expires_before_sending"),
            // With local_time it must outlast the last time zone: 08:00 at UTC−12 is 20:00 UTC.
            (#""send_at": "2027-01-16T08:00:00", "local_time": true, "expires_at": "2027-01-16T19:00:00Z""#, "expires_at", "expires_before_sending"),
        ]
        for (fields, field, code) in cases {
            let error = Self.error(#"{"title": "x", "all": true, \#(fields)}"#)
            #expect(error?.field == field, "\(fields): \(String(describing: error))")
            #expect(error?.code == code, "\(fields): \(String(describing: error))")
        }
    }
}
