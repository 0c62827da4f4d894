import Foundation
import NotifiableCore
import NotifiableTesting
import Testing

@testable import NotifiableDelivery

/// What a current iOS or Android app is sent for each presentation field, from the request body
/// as a backend writes it to the bytes each gateway gets (docs/compatibility.md §12).
@Suite struct PresentationPayloadTests {
    /// 2026-11-20T00:00:00Z.
    static let now = Date(timeIntervalSince1970: 1_795_132_800)

    static func content(_ body: String, defaults: PushDefaults = PushDefaults()) throws -> NotificationContent {
        let request = try NotificationRequest.parse(try JSONValue.decode(Array(body.utf8)), now: now)
        return request.applying(defaults, now: now).content
    }

    static func apns(_ content: NotificationContent, id: Int64 = 7) throws -> String {
        String(decoding: try APNsPayload.encode(content: content, language: nil, country: nil, notificationID: id), as: UTF8.self)
    }

    static func fcm(_ content: NotificationContent, platform: DevicePlatform? = nil, id: Int64 = 7) throws -> [String: JSONValue] {
        let bytes = try FCMMessage.encode(token: "tok", content: content, language: nil, country: nil, notificationID: id, now: now, platform: platform)
        return try #require(try JSONValue.decode(bytes)["message"]?.objectValue)
    }

    @Test func aCriticalAlertCarriesItsLevelAndSoundDictionary() throws {
        let content = try Self.content(
            #"""
            {"title": "Flood warning", "message": "Leave now", "interruption_level": "critical",
             "critical_sound": {"name": "siren.caf", "volume": 0.75}, "relevance_score": 1, "target_content_id": "alerts",
             "filter_criteria": "safety", "ttl_seconds": 0, "all": true}
            """#)
        #expect(
            try Self.apns(content)
                == #"{"aps":{"alert":{"body":"Leave now","title":"Flood warning"},"filter-criteria":"safety","interruption-level":"critical","#
                + #""relevance-score":1,"sound":{"critical":1,"name":"siren.caf","volume":0.75},"target-content-id":"alerts"},"n_id":7}"#)
    }

    @Test func aCriticalSoundAloneMakesTheAlertCriticalWithDefaults() throws {
        let content = try Self.content(#"{"message": "m", "critical_sound": {}, "all": true}"#)
        #expect(content.interruptionLevel == .critical)
        #expect(try Self.apns(content).contains(#""interruption-level":"critical","sound":{"critical":1,"name":"default","volume":1"#))
    }

    @Test func timeSensitiveIsUrgentOnAndroidInBothStyles() throws {
        let body = #"{"title": "Your driver is here", "interruption_level": "time-sensitive", "priority": "normal", "all": true}"#
        let data = try Self.fcm(try Self.content(body))
        #expect(data["android"]?["priority"] == .string("HIGH"))
        #expect(data["android"]?["notification"] == nil)
        let drawn = try Self.fcm(try Self.content(body, defaults: PushDefaults(androidStyle: .notification)))
        #expect(drawn["android"]?["priority"] == .string("HIGH"))
        #expect(drawn["android"]?["notification"]?["notification_priority"] == .string("PRIORITY_MAX"))
        // Passive and active leave the sender's priority alone.
        let passive = try Self.fcm(try Self.content(#"{"title": "t", "interruption_level": "passive", "priority": "normal", "all": true}"#))
        #expect(passive["android"]?["priority"] == .string("NORMAL"))
    }

    @Test func anImageReachesIOSThroughTheServiceExtensionAndAndroidInEitherStyle() throws {
        let body = #"{"title": "New photo", "image_url": "https://cdn.example.com/p/1.jpg", "all": true}"#
        let content = try Self.content(body)
        #expect(
            try Self.apns(content)
                == #"{"aps":{"alert":{"title":"New photo"},"mutable-content":1},"image_url":"https://cdn.example.com/p/1.jpg","n_id":7}"#)
        #expect(try Self.fcm(content)["data"]?["image_url"] == .string("https://cdn.example.com/p/1.jpg"))
        let drawn = try Self.fcm(try Self.content(body, defaults: PushDefaults(androidStyle: .notification)))
        #expect(drawn["android"]?["notification"]?["image"] == .string("https://cdn.example.com/p/1.jpg"))
        // The sender's own "mutable_content": false wins: it may have no extension.
        let plain = try Self.content(#"{"title": "t", "image_url": "https://a.example/i.png", "mutable_content": false, "all": true}"#)
        #expect(!plain.mutableContent)
    }

    @Test func androidPresentationInTheNotificationStyle() throws {
        let content = try Self.content(
            #"""
            {"title": "Order shipped", "message": "Arrives Tuesday", "badge": 2, "sound": "ding",
             "android": {"channel_id": "orders", "icon": "ic_box", "color": "#FF6600", "click_action": "OPEN_ORDER",
                         "visibility": "private", "sticky": true}, "all": true}
            """#, defaults: PushDefaults(androidStyle: .notification))
        let message = try Self.fcm(content)
        #expect(
            message["android"]?["notification"]
                == .object([
                    "tag": .string("n7"), "sound": .string("ding"), "notification_count": .integer(2), "channel_id": .string("orders"),
                    "icon": .string("ic_box"), "color": .string("#FF6600"), "click_action": .string("OPEN_ORDER"),
                    "visibility": .string("PRIVATE"), "sticky": .bool(true),
                ]))
        #expect(message["notification"] == .object(["title": .string("Order shipped"), "body": .string("Arrives Tuesday")]))
    }

    @Test func androidPresentationInTheDataStyleIsPrefixedDataTheAppReads() throws {
        let content = try Self.content(
            #"""
            {"title": "Order shipped", "badge": 2,
             "android": {"channel_id": "orders", "color": "#ff6600", "visibility": "secret", "sticky": false, "notification_count": 5},
             "all": true}
            """#)
        let message = try Self.fcm(content)
        #expect(
            message["data"]
                == .object([
                    "n_id": .string("7"), "title": .string("Order shipped"), "android_channel_id": .string("orders"),
                    "android_color": .string("#ff6600"), "android_visibility": .string("secret"), "android_sticky": .string("false"),
                    "android_notification_count": .string("5"),
                ]))
        #expect(message["android"]?["notification"] == nil)
        #expect(message["notification"] == nil)
    }

    @Test func theAppsDefaultChannelFillsOnlyWhatTheNotificationLeavesUnsaid() throws {
        let defaults = PushDefaults(androidStyle: .notification, androidChannelID: "general")
        let unsaid = try Self.fcm(try Self.content(#"{"title": "t", "all": true}"#, defaults: defaults))
        #expect(unsaid["android"]?["notification"]?["channel_id"] == .string("general"))
        let said = try Self.fcm(try Self.content(#"{"title": "t", "android": {"channel_id": "promo"}, "all": true}"#, defaults: defaults))
        #expect(said["android"]?["notification"]?["channel_id"] == .string("promo"))
    }

    @Test func localizationKeysForBothPlatforms() throws {
        let body = #"""
            {"title_loc_key": "SHIPPED_TITLE", "title_loc_args": ["#42"], "loc_key": "SHIPPED_BODY", "loc_args": ["Tuesday", "DHL"],
             "all": true}
            """#
        let content = try Self.content(body)
        #expect(
            try Self.apns(content)
                == ##"{"aps":{"alert":{"loc-args":["Tuesday","DHL"],"loc-key":"SHIPPED_BODY","title-loc-args":["#42"],"title-loc-key":"SHIPPED_TITLE"}},"n_id":7}"##
        )
        let drawn = try Self.fcm(try Self.content(body, defaults: PushDefaults(androidStyle: .notification)))
        let notification = try #require(drawn["android"]?["notification"]?.objectValue)
        #expect(notification["title_loc_key"] == .string("SHIPPED_TITLE"))
        #expect(notification["title_loc_args"] == .array([.string("#42")]))
        #expect(notification["body_loc_key"] == .string("SHIPPED_BODY"))
        #expect(notification["body_loc_args"] == .array([.string("Tuesday"), .string("DHL")]))
        let data = try Self.fcm(content)["data"]
        #expect(data?["body_loc_key"] == .string("SHIPPED_BODY"))
        #expect(data?["body_loc_args"] == .string(#"["Tuesday","DHL"]"#))
    }

    @Test func anIPhoneOnFirebaseGetsAnAPNsBlock() throws {
        let content = try Self.content(
            #"""
            {"title": "Hi", "message": "There", "badge": 1, "sound": "default", "image_url": "https://a.example/i.png",
             "interruption_level": "time-sensitive", "collapse_id": "chat-9", "ttl_seconds": 3600, "parameters": {"screen": "chat"},
             "all": true}
            """#)
        let message = try Self.fcm(content, platform: .ios)
        #expect(message["android"] == nil)
        #expect(message["notification"] == nil)
        #expect(message["data"] == .object(["n_id": .string("7"), "title": .string("Hi"), "message": .string("There"), "screen": .string("chat")]))
        let expiry = String(Int64(Self.now.timeIntervalSince1970) + 3600)
        #expect(
            message["apns"]
                == .object([
                    "headers": .object([
                        "apns-priority": .string("10"), "apns-push-type": .string("alert"), "apns-expiration": .string(expiry),
                        "apns-collapse-id": .string("chat-9"),
                    ]),
                    "payload": .object([
                        "aps": .object([
                            "alert": .object(["title": .string("Hi"), "body": .string("There")]), "badge": .integer(1), "sound": .string("default"),
                            "mutable-content": .integer(1), "interruption-level": .string("time-sensitive"),
                        ])
                    ]),
                    "fcm_options": .object(["image": .string("https://a.example/i.png")]),
                ]))
    }

    @Test func aBackgroundUpdateToAnIPhoneOnFirebaseGoesAtPriorityFive() throws {
        let content = try Self.content(#"{"content_available": true, "all": true}"#)
        let headers = try Self.fcm(content, platform: .ios)["apns"]?["headers"]
        #expect(headers?["apns-priority"] == .string("5"))
        #expect(headers?["apns-push-type"] == .string("background"))
    }

    @Test func overridesAreMergedLastPerPlatform() throws {
        let content = try Self.content(
            #"""
            {"title": "t", "message": "m", "parameters": {"k": "v"}, "all": true,
             "apns": {"headers": {"apns-priority": "5", "apns-push-type": "alert", "apns-unknown-next-year": "x"},
                      "payload": {"aps": {"alert": {"launch-image": "l.png"}, "sound": null}, "k": "apple"}},
             "fcm": {"android": {"direct_boot_ok": true, "notification": {"channel_id": "c"}}, "data": {"extra": "1"},
                     "apns": {"headers": {"apns-collapse-id": "fcm-only"}}}}
            """#, defaults: PushDefaults(androidStyle: .notification))
        #expect(
            try Self.apns(content)
                == #"{"aps":{"alert":{"body":"m","launch-image":"l.png","title":"t"}},"k":"apple","n_id":7}"#)
        let headers = APNsRequestHeaders.make(content: content, topic: "com.example", deliveryID: 1, notificationID: 7, now: Self.now)
        #expect(headers.first { $0.0 == "apns-priority" }?.1 == "5")
        #expect(headers.last?.0 == "apns-unknown-next-year")
        #expect(headers.first { $0.0 == "apns-topic" }?.1 == "com.example")
        let android = try Self.fcm(content)
        #expect(android["android"]?["direct_boot_ok"] == .bool(true))
        #expect(android["android"]?["notification"]?["channel_id"] == .string("c"))
        #expect(android["android"]?["notification"]?["tag"] == .string("n7"))
        #expect(android["data"]?["extra"] == .string("1"))
        let iphone = try Self.fcm(content, platform: .ios)
        // Each platform's override reaches its own platform only.
        #expect(iphone["apns"]?["headers"]?["apns-priority"] == .string("10"))
        #expect(iphone["apns"]?["headers"]?["apns-collapse-id"] == .string("fcm-only"))
        #expect(headers.first { $0.0 == "apns-collapse-id" }?.1 == "n7")
        #expect(iphone["data"]?["extra"] == .string("1"))
    }

    @Test func anOverrideThatMakesThePayloadTooLargeFailsThePush() throws {
        let big = String(repeating: "x", count: 4_100)
        let content = try Self.content(#"{"title": "t", "apns": {"payload": {"blob": "\#(big)"}}, "all": true}"#)
        #expect(throws: APNsPayloadError.self) { try Self.apns(content) }
        let refusal = validationError { () throws(ValidationError) in try OverrideSizeCheck.check(content) }
        #expect(refusal?.code == "too_large")
        #expect(refusal?.field == "apns.payload")
        let data = try Self.content(#"{"title": "t", "fcm": {"data": {"blob": "\#(big)"}}, "all": true}"#)
        #expect(validationError { () throws(ValidationError) in try OverrideSizeCheck.check(data) }?.field == "fcm")
        // Within the limit, and without overrides (checked when sent, as before), nothing is refused.
        let small = try Self.content(#"{"title": "t", "apns": {"payload": {"blob": "x"}}, "all": true}"#)
        #expect(validationError { () throws(ValidationError) in try OverrideSizeCheck.check(small) } == nil)
    }

    func validationError(_ body: () throws(ValidationError) -> Void) -> ValidationError? {
        do {
            try body()
            return nil
        } catch {
            return error
        }
    }
}
