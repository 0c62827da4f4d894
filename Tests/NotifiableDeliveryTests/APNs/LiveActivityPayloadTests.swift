import Foundation
import NotifiableCore
import NotifiableTesting
import Testing

@testable import NotifiableDelivery

/// A Live Activity event, from the backend's request to the APNs request (docs/compatibility.md §12).
@Suite struct LiveActivityPayloadTests {
    static let now = Date(timeIntervalSince1970: 1_795_132_800)

    static func parse(_ body: String) throws -> LiveActivityRequest {
        try LiveActivityRequest.parse(try JSONValue.decode(Array(body.utf8)), now: now)
    }

    static func refusal(_ body: String) throws -> ValidationError? {
        let json = try JSONValue.decode(Array(body.utf8))
        do {
            _ = try LiveActivityRequest.parse(json, now: now)
            return nil
        } catch {
            return error
        }
    }

    @Test func anUpdateIsItsApsAndNIDWithTheLiveActivityHeaders() throws {
        var request = try Self.parse(
            #"{"event": "update", "activity_id": "match-7", "content_state": {"home": 2, "away": 1}, "stale_date": 1795136400, "relevance_score": 75}"#)
        request.push.timestamp = 1_795_132_801
        let content = NotificationContent(expiresAt: Self.now.addingTimeInterval(3600)).with(liveActivity: request.push)
        let payload = String(
            decoding: try APNsPayload.encode(content: content, language: nil, country: nil, notificationID: 9), as: UTF8.self)
        #expect(
            payload
                == #"{"aps":{"content-state":{"away":1,"home":2},"event":"update","relevance-score":75,"stale-date":1795136400,"timestamp":1795132801},"n_id":9}"#
        )
        let headers = APNsRequestHeaders.make(content: content, topic: "com.example.app", deliveryID: 3, notificationID: 9, now: Self.now)
        #expect(headers.map(\.0) == ["apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-id"])
        #expect(headers[0].1 == "com.example.app.push-type.liveactivity")
        #expect(headers[1].1 == "liveactivity")
        #expect(headers[2].1 == "5", "normal by default: priority 10 draws on the device's budget")
        #expect(headers[3].1 == "1795136400")
    }

    @Test func aStartCarriesItsAttributesAndAlertAndGoesAtTheAskedPriority() throws {
        var request = try Self.parse(
            #"""
            {"event": "start", "activity_id": "flight-BA117", "attributes_type": "FlightAttributes", "attributes": {"flight": "BA117"},
             "content_state": {"gate": "B7"}, "alert": {"title": "Boarding soon", "body": "Gate B7", "sound": "chime.caf"},
             "priority": "high", "user_aliases": ["ann"]}
            """#)
        request.push.timestamp = 1_795_132_800
        #expect(request.targeting.userAliases == ["ann"])
        let content = NotificationContent().with(liveActivity: request.push)
        let payload = String(decoding: try APNsPayload.encode(content: content, language: nil, country: nil, notificationID: 1), as: UTF8.self)
        #expect(
            payload
                == #"{"aps":{"alert":{"body":"Gate B7","title":"Boarding soon"},"attributes":{"flight":"BA117"},"attributes-type":"FlightAttributes","#
                + #""content-state":{"gate":"B7"},"event":"start","sound":"chime.caf","timestamp":1795132800},"n_id":1}"#)
        let headers = APNsRequestHeaders.make(content: content, topic: "com.example.app", deliveryID: 1, notificationID: 1, now: Self.now)
        #expect(headers.first { $0.0 == "apns-priority" }?.1 == "10")
    }

    @Test func anEndMayCarryItsDismissalDate() throws {
        let request = try Self.parse(#"{"event": "end", "activity_id": "m", "dismissal_date": "2026-11-20T01:00:00Z"}"#)
        #expect(request.push.dismissalDate == 1_795_136_400)
        #expect(request.push.contentState == nil)
    }

    static let refused: [(body: String, code: String, field: String)] = [
        (#"{"activity_id": "m", "content_state": {}}"#, "missing_field", "event"),
        (#"{"event": "pause", "activity_id": "m"}"#, "invalid_event", "event"),
        (#"{"event": "update", "content_state": {}}"#, "missing_field", "activity_id"),
        (#"{"event": "update", "activity_id": "", "content_state": {}}"#, "invalid_value", "activity_id"),
        (#"{"event": "update", "activity_id": "m"}"#, "missing_field", "content_state"),
        (#"{"event": "update", "activity_id": "m", "content_state": [1]}"#, "invalid_type", "content_state"),
        (#"{"event": "update", "activity_id": "m", "content_state": {"x": "\#(String(repeating: "y", count: 4100))"}}"#, "too_large", "content_state"),
        (#"{"event": "update", "activity_id": "m", "content_state": {}, "stale_date": 1000}"#, "already_past", "stale_date"),
        (#"{"event": "update", "activity_id": "m", "content_state": {}, "dismissal_date": 1895132800}"#, "conflicting_fields", "dismissal_date"),
        (#"{"event": "update", "activity_id": "m", "content_state": {}, "priority": "urgent"}"#, "invalid_priority", "priority"),
        (#"{"event": "update", "activity_id": "m", "content_state": {}, "relevance_score": "top"}"#, "invalid_type", "relevance_score"),
        (#"{"event": "update", "activity_id": "m", "content_state": {}, "user_aliases": ["a"]}"#, "conflicting_fields", "user_aliases"),
        (#"{"event": "update", "activity_id": "m", "content_state": {}, "alert": {}}"#, "missing_field", "alert"),
        (#"{"event": "update", "activity_id": "m", "content_state": {}, "alert": {"text": "x"}}"#, "unknown_field", "alert.text"),
        (#"{"event": "update", "activity_id": "m", "content_state": {}, "title": "x"}"#, "unknown_field", "title"),
        (
            #"{"event": "start", "activity_id": "m", "content_state": {}, "attributes": {}, "alert": {"title": "t"}, "user_aliases": ["a"]}"#,
            "missing_field", "attributes_type"
        ),
        (
            #"{"event": "start", "activity_id": "m", "content_state": {}, "attributes_type": "T", "attributes": {}, "user_aliases": ["a"]}"#,
            "missing_field", "alert"
        ),
        (
            #"{"event": "start", "activity_id": "m", "content_state": {}, "attributes_type": "T", "attributes": {}, "alert": {"title": "t"}}"#,
            "no_target", "user_aliases"
        ),
        // Each part within its own limit, together over APNs's 4,096 bytes.
        (
            #"{"event": "update", "activity_id": "m", "content_state": {"a": "\#(String(repeating: "a", count: 3000))"}, "alert": {"body": "\#(String(repeating: "b", count: 1500))"}}"#,
            "too_large", "content_state"
        ),
    ]

    @Test(arguments: refused)
    func aWrongEventIsRefusedNamingItsField(_ example: (body: String, code: String, field: String)) throws {
        let error = try #require(try Self.refusal(example.body), "accepted: \(example.body)")
        #expect(error.code == example.code, "\(example.body): \(error.message)")
        #expect(error.field == example.field, "\(example.body): \(error.message)")
    }
}

extension NotificationContent {
    fileprivate func with(liveActivity: LiveActivityPush) -> NotificationContent {
        var content = self
        content.liveActivity = liveActivity
        return content
    }
}
