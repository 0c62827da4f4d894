import Foundation
import NotifiableCore
import Testing

@testable import NotifiableDelivery

/// A sync signal as each gateway receives it: a background push that shows nothing.
@Suite struct SyncSignalTests {
    static let change = UserNotificationChange(
        seq: 17, kind: .updated, notificationID: 42, readState: .read, actionState: .dismissed, deviceID: 5, changedAt: Date()
    )
    static let expiresAt = Date(timeIntervalSince1970: 2_000_000_000)

    @Test func apnsGetsAContentAvailablePushAtPriorityFiveCollapsedPerNotification() throws {
        let content = SyncSignal.content(for: Self.change, expiresAt: Self.expiresAt)
        let payload = String(decoding: try APNsPayload.encode(content: content, language: "fr", country: nil, notificationID: 42), as: UTF8.self)
        #expect(
            payload == #"{"aps":{"content-available":1},"n_cursor":"17","n_id":42,"n_read_state":"read","n_sync":"updated","n_user_action_state":"dismissed"}"#)
        let headers = Dictionary(
            uniqueKeysWithValues: APNsRequestHeaders.make(
                content: content, topic: "com.example.app", deliveryID: 9, notificationID: 42, now: Date(timeIntervalSince1970: 1_900_000_000)
            ))
        #expect(headers["apns-push-type"] == "background")
        #expect(headers["apns-priority"] == "5")
        #expect(headers["apns-collapse-id"] == "n42-state")
        #expect(headers["apns-expiration"] == "2000000000")
    }

    @Test func fcmGetsADataOnlyMessageAtNormalPriority() throws {
        let content = SyncSignal.content(for: Self.change, expiresAt: Self.expiresAt)
        let body = try FCMMessage.encode(
            token: "t", content: content, language: nil, country: nil, notificationID: 42, now: Date(timeIntervalSince1970: 1_999_999_000)
        )
        let message = try #require(try JSONValue.decode(body)["message"])
        #expect(message["notification"] == nil)
        #expect(
            message["data"]
                == .object([
                    "n_id": .string("42"), "n_sync": .string("updated"), "n_read_state": .string("read"),
                    "n_user_action_state": .string("dismissed"), "n_cursor": .string("17"),
                ]))
        #expect(message["android"] == .object(["priority": .string("NORMAL"), "ttl": .string("1000s"), "collapse_key": .string("n42-state")]))
    }
}
