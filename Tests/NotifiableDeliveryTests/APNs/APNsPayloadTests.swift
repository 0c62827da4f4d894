import Foundation
import NotifiableCore
import Testing

@testable import NotifiableDelivery

@Suite struct APNsPayloadTests {
    func text(_ content: NotificationContent, language: String? = nil, country: String? = nil, id: Int64 = 42) throws -> String {
        String(decoding: try APNsPayload.encode(content: content, language: language, country: country, notificationID: id), as: UTF8.self)
    }

    func object(_ content: NotificationContent, language: String? = nil, country: String? = nil, id: Int64 = 42) throws -> [String: JSONValue] {
        let bytes = try APNsPayload.encode(content: content, language: language, country: country, notificationID: id)
        return try #require(try JSONValue.decode(bytes).objectValue)
    }

    @Test func fullExampleExactJSON() throws {
        let content = NotificationContent(
            text: LocalizedText(title: "Title", subtitle: "Sub", message: "Body / with slash"),
            parameters: ["url": .string("https://example.com/x"), "deep": .object(["a": .integer(1), "b": .bool(true)])],
            sound: "default", badge: 3, threadID: "thread-1", category: "REPLY", contentAvailable: true,
            mutableContent: true, priority: .high, collapseID: "c1", expiresAt: Date(timeIntervalSince1970: 2_000_000_000))
        #expect(
            try text(content, id: 9_007_199_254_740_993)
                == #"{"aps":{"alert":{"body":"Body / with slash","subtitle":"Sub","title":"Title"},"badge":3,"category":"REPLY","content-available":1,"mutable-content":1,"sound":"default","thread-id":"thread-1"},"deep":{"a":1,"b":true},"n_id":9007199254740993,"url":"https://example.com/x"}"#
        )
    }

    @Test func minimalAlert() throws {
        let content = NotificationContent(text: LocalizedText(message: "Hi"))
        #expect(try text(content, id: 1) == #"{"aps":{"alert":{"body":"Hi"}},"n_id":1}"#)
    }

    @Test func onlySetAlertKeys() throws {
        let content = NotificationContent(text: LocalizedText(title: "T"))
        #expect(try object(content)["aps"] == .object(["alert": .object(["title": .string("T")])]))
    }

    @Test func localizedSelection() throws {
        let content = NotificationContent(
            text: LocalizedText(title: "Hello", message: "default"),
            localized: [
                "pt": LocalizedText(title: "Olá", message: "pt"),
                "pt-br": LocalizedText(title: "Oi", message: "pt-br"),
                "fr": LocalizedText(message: "Bonjour"),
            ])
        func alert(_ language: String?, _ country: String?) throws -> JSONValue? {
            try object(content, language: language, country: country)["aps"]?.objectValue?["alert"]
        }
        #expect(try alert("pt", "BR") == .object(["title": .string("Oi"), "body": .string("pt-br")]))
        #expect(try alert("PT", "pt") == .object(["title": .string("Olá"), "body": .string("pt")]))
        #expect(try alert("pt", nil) == .object(["title": .string("Olá"), "body": .string("pt")]))
        // Each field falls back on its own: French gives only a message, the title is the default's.
        #expect(try alert("fr", "CA") == .object(["title": .string("Hello"), "body": .string("Bonjour")]))
        #expect(try alert("de", "DE") == .object(["title": .string("Hello"), "body": .string("default")]))
        #expect(try alert(nil, "BR") == .object(["title": .string("Hello"), "body": .string("default")]))
        // Non-ASCII is written as UTF-8, not escaped.
        #expect(try text(content, language: "pt", country: nil).contains("Olá"))
    }

    @Test func backgroundOnlyHasNoAlert() throws {
        let content = NotificationContent(parameters: ["sync": .string("inbox")], contentAvailable: true)
        #expect(content.isBackgroundOnly)
        let payload = try object(content, id: 5)
        #expect(payload["aps"] == .object(["content-available": .integer(1)]))
        #expect(payload["sync"] == .string("inbox"))
        #expect(try text(content, id: 5) == #"{"aps":{"content-available":1},"n_id":5,"sync":"inbox"}"#)
    }

    @Test func noTextMeansNoAlertKey() throws {
        let content = NotificationContent(sound: "ping.caf", badge: 0)
        #expect(try object(content)["aps"] == .object(["sound": .string("ping.caf"), "badge": .integer(0)]))
    }

    @Test func falseFlagsAreOmitted() throws {
        let content = NotificationContent(text: LocalizedText(message: "m"), contentAvailable: false, mutableContent: false)
        let aps = try #require(try object(content)["aps"]?.objectValue)
        #expect(aps["content-available"] == nil)
        #expect(aps["mutable-content"] == nil)
    }

    @Test func parametersAtTopLevel() throws {
        let content = NotificationContent(
            text: LocalizedText(message: "m"),
            parameters: [
                "string": .string("s"), "int": .integer(-7), "double": .number(1.5), "null": .null,
                "list": .array([.integer(1), .string("two")]), "nested": .object(["k": .string("v")]),
            ])
        let payload = try object(content)
        #expect(payload["string"] == .string("s"))
        #expect(payload["int"] == .integer(-7))
        #expect(payload["double"] == .number(1.5))
        #expect(payload["null"] == .null)
        #expect(payload["list"] == .array([.integer(1), .string("two")]))
        #expect(payload["nested"] == .object(["k": .string("v")]))
        #expect(Set(payload.keys) == ["aps", "n_id", "string", "int", "double", "null", "list", "nested"])
    }

    @Test func reservedKeysWinOverParameters() throws {
        let content = NotificationContent(
            text: LocalizedText(message: "m"), parameters: ["aps": .string("spoof"), "n_id": .string("spoof")])
        let payload = try object(content, id: 77)
        #expect(payload["n_id"] == .integer(77))
        #expect(payload["aps"] == .object(["alert": .object(["body": .string("m")])]))
    }

    @Test func notificationIDIsANumber() throws {
        let json = try text(NotificationContent(text: LocalizedText(message: "m")), id: 123_456_789)
        #expect(json.contains(#""n_id":123456789"#))
        #expect(!json.contains(#""n_id":"# + "\""))
        let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        #expect(parsed?["n_id"] is NSNumber)
    }

    @Test func sizeLimit() throws {
        func content(_ length: Int) -> NotificationContent {
            NotificationContent(parameters: ["p": .string(String(repeating: "x", count: length))])
        }
        let base = try APNsPayload.encode(content: content(0), language: nil, country: nil, notificationID: 1).count
        let fits = try APNsPayload.encode(content: content(4096 - base), language: nil, country: nil, notificationID: 1)
        #expect(fits.count == 4096)
        #expect(throws: APNsPayloadError.payloadTooLarge(size: 4097)) {
            _ = try APNsPayload.encode(content: content(4097 - base), language: nil, country: nil, notificationID: 1)
        }
        do {
            _ = try APNsPayload.encode(content: content(5000), language: nil, country: nil, notificationID: 1)
            Issue.record("a 5000-byte payload was accepted")
        } catch {
            #expect(error == .payloadTooLarge(size: 5000 + base))
            #expect(error.description == "payload_too_large: \(5000 + base) bytes, APNs accepts at most 4096")
        }
    }

    @Test func sizeCountsUTF8Bytes() throws {
        // 2100 × "é" is 4200 bytes of UTF-8: too large although only 2100 characters.
        let content = NotificationContent(text: LocalizedText(message: String(repeating: "é", count: 2100)))
        let overhead = #"{"aps":{"alert":{"body":""}},"n_id":1}"#.utf8.count
        #expect(throws: APNsPayloadError.payloadTooLarge(size: 4200 + overhead)) {
            _ = try APNsPayload.encode(content: content, language: nil, country: nil, notificationID: 1)
        }
    }

    @Test func nonFiniteNumberIsAnErrorNotACrash() {
        let content = NotificationContent(parameters: ["bad": .number(.nan)])
        #expect(throws: APNsPayloadError.self) {
            _ = try APNsPayload.encode(content: content, language: nil, country: nil, notificationID: 1)
        }
    }
}
