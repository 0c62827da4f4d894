import Foundation
import NotifiableCore
import Testing

@Suite struct StatefulOptionsTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func parse(_ json: String) throws -> NotificationRequest {
        try NotificationRequest.parse(try JSONValue.decode(Array(json.utf8)), now: now)
    }

    static func error(_ json: String) -> ValidationError? {
        do {
            _ = try parse(json)
            return nil
        } catch { return error as? ValidationError }
    }

    @Test func trueKeepsCopiesThirtyDaysAndAnObjectSaysUntilWhen() throws {
        #expect(try Self.parse(#"{"title": "x", "user_aliases": ["a"], "stateful": true}"#).stateful?.expiresAt == Self.now.addingTimeInterval(30 * 86400))
        #expect(try Self.parse(#"{"title": "x", "user_aliases": ["a"], "stateful": false}"#).stateful == nil)
        #expect(try Self.parse(#"{"title": "x", "user_aliases": ["a"]}"#).stateful == nil)
        let inADay = try Self.parse(#"{"title": "x", "user_aliases": ["a"], "stateful": {"ttl_seconds": 86400}}"#)
        #expect(inADay.stateful?.expiresAt == Self.now.addingTimeInterval(86400))
        let until = try Self.parse(#"{"title": "x", "user_aliases": ["a"], "notification": {"stateful": {"expires_at": 1800001000}}}"#)
        #expect(until.stateful?.expiresAt == Date(timeIntervalSince1970: 1_800_001_000))
        // The push's own expiry is separate from the copies'.
        let both = try Self.parse(#"{"title": "x", "user_aliases": ["a"], "ttl_seconds": 60, "stateful": true}"#)
        #expect(both.content.expiresAt == Self.now.addingTimeInterval(60))
        #expect(both.stateful?.expiresAt == Self.now.addingTimeInterval(30 * 86400))
    }

    @Test func refusalsNameTheField() {
        #expect(Self.error(#"{"title": "x", "all": true, "stateful": true}"#)?.code == "stateful_needs_user_aliases")
        #expect(
            Self.error(#"{"title": "x", "user_aliases": ["a"], "filters": [{"field": "language", "op": "=", "value": "en"}], "stateful": true}"#)?.code
                == "stateful_needs_user_aliases")
        #expect(Self.error(#"{"title": "x", "user_aliases": ["a"], "stateful": {"expires_at": 1802600000}}"#)?.field == "stateful.expires_at")
        #expect(Self.error(#"{"title": "x", "user_aliases": ["a"], "stateful": {"expires_at": 1700000000}}"#)?.code == "already_expired")
        #expect(Self.error(#"{"title": "x", "user_aliases": ["a"], "stateful": 1}"#)?.field == "stateful")
        #expect(Self.error(#"{"title": "x", "user_aliases": ["a"], "stateful": true, "send_at": 1800000600}"#)?.field == "send_at")
        #expect(Self.error(#"{"title": "x", "user_aliases": ["a"], "stateful": {"ttl_seconds": 59}}"#)?.code == "too_short")
        #expect(Self.error(#"{"title": "x", "user_aliases": ["a"], "stateful": {"ttl_seconds": 60}}"#) == nil)
        #expect(Self.error(#"{"title": "x", "user_aliases": ["a"], "stateful": {"days": 3}}"#)?.field == "stateful.days")
    }
}
