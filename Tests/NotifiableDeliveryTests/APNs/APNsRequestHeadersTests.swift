import Foundation
import NotifiableCore
import Testing

@testable import NotifiableDelivery

@Suite struct APNsRequestHeadersTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)
    let alert = NotificationContent(text: LocalizedText(message: "Hi"))
    let background = NotificationContent(contentAvailable: true)

    func headers(_ content: NotificationContent, deliveryID: Int64 = 1) -> [String: String] {
        let list = APNsRequestHeaders.make(content: content, topic: "com.example.app", deliveryID: deliveryID, notificationID: 7, now: now)
        #expect(Set(list.map(\.0)).count == list.count, "no header twice")
        return Dictionary(uniqueKeysWithValues: list)
    }

    @Test func fullListInOrder() {
        var content = alert
        content.collapseID = "score"
        content.expiresAt = Date(timeIntervalSince1970: 1_700_003_600.75)
        let list = APNsRequestHeaders.make(content: content, topic: "com.example.app", deliveryID: 255, notificationID: 7, now: now)
        #expect(list.map(\.0) == ["apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id", "apns-id"])
        #expect(list.map(\.1) == ["com.example.app", "alert", "10", "1700003600", "score", "00000000-0000-4000-8000-0000000000ff"])
    }

    @Test func topic() {
        #expect(headers(alert)["apns-topic"] == "com.example.app")
    }

    @Test func pushType() {
        #expect(headers(alert)["apns-push-type"] == "alert")
        #expect(headers(background)["apns-push-type"] == "background")
        // content-available with visible parts is still an alert push.
        var visible = background
        visible.sound = "default"
        #expect(headers(visible)["apns-push-type"] == "alert")
        // Nothing visible and not content-available: not background (APNs would drop it), alert.
        #expect(headers(NotificationContent())["apns-push-type"] == "alert")
    }

    @Test func priority() {
        #expect(headers(alert)["apns-priority"] == "10")
        var normal = alert
        normal.priority = .normal
        #expect(headers(normal)["apns-priority"] == "5")
        #expect(headers(background)["apns-priority"] == "5")
        var urgentBackground = background
        urgentBackground.priority = .high
        #expect(headers(urgentBackground)["apns-priority"] == "5")
    }

    @Test func expiration() {
        // No expiry (content stored before apps had a time to live): four weeks, never "0", which
        // would tell APNs not to store the push for an offline iPhone.
        #expect(headers(alert)["apns-expiration"] == String(1_700_000_000 + 28 * 24 * 3600))
        var content = alert
        content.expiresAt = Date(timeIntervalSince1970: 1_800_000_000.999)
        #expect(headers(content)["apns-expiration"] == "1800000000")
        // Already expired: deliver-once rather than a date in the past.
        content.expiresAt = now
        #expect(headers(content)["apns-expiration"] == "0")
        content.expiresAt = now.addingTimeInterval(-60)
        #expect(headers(content)["apns-expiration"] == "0")
        // Now or never ("ttl_seconds": 0): 0 although the queue may still try it for a while.
        content.expiresAt = now.addingTimeInterval(60)
        content.nowOrNever = true
        #expect(headers(content)["apns-expiration"] == "0")
    }

    @Test func collapseID() {
        // Without the sender's, one per notification: a push sent twice replaces itself on the phone.
        #expect(headers(alert)["apns-collapse-id"] == "n7")
        var content = alert
        content.collapseID = "game-42"
        #expect(headers(content)["apns-collapse-id"] == "game-42")
        content.collapseID = ""
        #expect(headers(content)["apns-collapse-id"] == "n7")
    }

    @Test(arguments: [Int64(0), 1, 255, 123_456_789, 0xFFFF_FFFF_FFFF, 0x1_0000_0000_0000, .max, -1, .min])
    func apnsIDIsAValidDeterministicUUID(_ id: Int64) throws {
        let apnsID = APNsRequestHeaders.apnsID(forDelivery: id)
        #expect(apnsID == APNsRequestHeaders.apnsID(forDelivery: id))
        #expect(headers(alert, deliveryID: id)["apns-id"] == apnsID)
        let uuid = try #require(UUID(uuidString: apnsID))
        #expect(uuid.uuidString.lowercased() == apnsID)
        #expect(apnsID.count == 36)
        // Version 4, RFC 4122 variant.
        let chars = Array(apnsID)
        #expect(chars[14] == "4")
        #expect("89ab".contains(chars[19]))
    }

    @Test func apnsIDFormat() {
        #expect(APNsRequestHeaders.apnsID(forDelivery: 1) == "00000000-0000-4000-8000-000000000001")
        #expect(APNsRequestHeaders.apnsID(forDelivery: 0xABC_DEF0_1234) == "00000000-0000-4000-8000-0abcdef01234")
        #expect(APNsRequestHeaders.apnsID(forDelivery: 0x1234_5678_9ABC_DEF0) == "00000000-1234-4000-8000-56789abcdef0")
    }

    @Test func apnsIDsAreDistinct() {
        let ids: [Int64] = [0, 1, 2, 0xFFFF_FFFF_FFFF, 0x1_0000_0000_0000, 0x1_0000_0000_0001, .max, -1]
        #expect(Set(ids.map(APNsRequestHeaders.apnsID(forDelivery:))).count == ids.count)
    }
}
