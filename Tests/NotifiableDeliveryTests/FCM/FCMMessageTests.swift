import Foundation
import NotifiableCore
import Testing

@testable import NotifiableDelivery

@Suite struct FCMMessageTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func encode(
        _ content: NotificationContent, language: String? = nil, country: String? = nil, notificationID: Int64 = 77
    ) throws -> (text: String, message: [String: JSONValue]) {
        let bytes = try FCMMessage.encode(
            token: "device-token", content: content, language: language, country: country, notificationID: notificationID, now: now
        )
        let decoded = try JSONValue.decode(bytes)
        // The token is spliced onto a shared part; the whole must still be compact JSON with sorted keys.
        #expect(String(decoding: bytes, as: UTF8.self) == decoded.jsonText())
        let root = try #require(decoded.objectValue)
        return (String(decoding: bytes, as: UTF8.self), try #require(root["message"]?.objectValue))
    }

    @Test func theTokenIsQuotedOntoTheSharedPart() throws {
        let content = NotificationContent(text: LocalizedText(title: "Hi", message: "There"))
        let token = "odd\"token\\with\u{1}"
        let bytes = try FCMMessage.encode(token: token, content: content, language: nil, country: nil, notificationID: 5, now: now)
        let message = try #require(try JSONValue.decode(bytes).objectValue?["message"]?.objectValue)
        #expect(message["token"] == .string(token))
        let shared = try FCMMessage.upToToken(content: content, language: nil, country: nil, notificationID: 5, now: now)
        #expect(FCMMessage.body(upToToken: shared, token: token) == bytes)
    }

    func failure(_ content: NotificationContent) -> FCMMessageError? {
        do {
            _ = try FCMMessage.encode(token: "t", content: content, language: nil, country: nil, notificationID: 77, now: now)
            return nil
        } catch {
            return error
        }
    }

    @Test func aSimpleNotificationIsCompactSortedJSON() throws {
        // Data style (the default): data-only, title and message among the data, as the Android SDK reads them.
        let (text, _) = try encode(NotificationContent(text: LocalizedText(title: "Hi", message: "There")))
        #expect(text == #"{"message":{"android":{"priority":"HIGH"},"data":{"message":"There","n_id":"77","title":"Hi"},"token":"device-token"}}"#)
    }

    @Test func notificationStyleAddsTheNotificationBlockAndATagBesideTheSameData() throws {
        let (text, _) = try encode(NotificationContent(text: LocalizedText(title: "Hi", message: "There"), androidStyle: .notification))
        #expect(
            text == #"{"message":{"android":{"notification":{"tag":"n77"},"priority":"HIGH"},"#
                + #""data":{"message":"There","n_id":"77","title":"Hi"},"notification":{"body":"There","title":"Hi"},"token":"device-token"}}"#)
    }

    @Test func textIsLocalizedForTheDevice() throws {
        let content = NotificationContent(
            text: LocalizedText(title: "Hello", subtitle: "Sub", message: "Default"),
            localized: [
                "fr": LocalizedText(title: "Bonjour", message: "Défaut"),
                "pt": LocalizedText(title: "Olá", message: "Português"),
                "pt-br": LocalizedText(title: "Oi", message: "Brasil"),
            ]
        )
        func notification(_ language: String?, _ country: String?) throws -> JSONValue? {
            var styled = content
            styled.androidStyle = .notification
            return try encode(styled, language: language, country: country).message["notification"]
        }
        func data(_ language: String?, _ country: String?) throws -> JSONValue? {
            try encode(content, language: language, country: country).message["data"]
        }
        let expected: [(String?, String?, String, String)] = [
            ("fr", nil, "Bonjour", "Défaut"), ("FR", "ca", "Bonjour", "Défaut"), ("pt", "BR", "Oi", "Brasil"),
            ("pt", "pt", "Olá", "Português"), ("de", nil, "Hello", "Default"), (nil, nil, "Hello", "Default"),
        ]
        for (language, country, title, message) in expected {
            // FCM has no subtitle: it is not sent.
            #expect(try notification(language, country) == .object(["title": .string(title), "body": .string(message)]))
            #expect(try data(language, country) == .object(["title": .string(title), "message": .string(message), "n_id": .string("77")]))
        }
    }

    @Test func withoutTextItIsADataMessage() throws {
        let content = NotificationContent(parameters: ["sync": .bool(true)], sound: "ding", badge: 3, contentAvailable: true)
        let (_, message) = try encode(content)
        #expect(message["notification"] == nil)
        #expect(message["android"] == .object(["priority": .string("HIGH")]))
        #expect(message["data"] == .object(["sync": .string("true"), "n_id": .string("77")]))

        let titleOnly = try encode(NotificationContent(text: LocalizedText(title: "Only a title"), androidStyle: .notification)).message
        #expect(titleOnly["notification"] == .object(["title": .string("Only a title")]))
        #expect(titleOnly["data"] == .object(["title": .string("Only a title"), "n_id": .string("77")]))
    }

    @Test func parametersAreFlattenedToStrings() throws {
        let content = NotificationContent(parameters: [
            "text": .string("as is"), "empty": .string(""), "int": .integer(-42), "big": .integer(Int64.max),
            "double": .number(1.5), "yes": .bool(true), "no": .bool(false), "nothing": .null,
            "list": .array([.integer(1), .string("two"), .null]),
            "object": .object(["z": .integer(1), "a": .object(["url": .string("https://x.test/a")])]),
            "n_id": .string("the parameter loses"),
        ])
        let (_, message) = try encode(content, notificationID: 9_007_199_254_740_993)
        #expect(
            message["data"]
                == .object([
                    "text": .string("as is"), "empty": .string(""), "int": .string("-42"), "big": .string("9223372036854775807"),
                    "double": .string("1.5"), "yes": .string("true"), "no": .string("false"),
                    "list": .string(#"[1,"two",null]"#), "object": .string(#"{"a":{"url":"https://x.test/a"},"z":1}"#),
                    // The notification id as a string, exact even beyond what a double holds.
                    "n_id": .string("9007199254740993"),
                ]))
    }

    @Test func androidOptionsFollowTheContent() throws {
        var content = NotificationContent(
            text: LocalizedText(message: "Score"), sound: "goal.wav", badge: 4, priority: .normal, collapseID: "match-7",
            expiresAt: now.addingTimeInterval(3600.9), androidStyle: .notification
        )
        #expect(
            try encode(content).message["android"]
                == .object([
                    "priority": .string("NORMAL"), "ttl": .string("3600s"), "collapse_key": .string("match-7"),
                    "notification": .object(["sound": .string("goal.wav"), "tag": .string("match-7"), "notification_count": .integer(4)]),
                ]))
        // Data style: the app draws the notification, so Android's notification options are not sent.
        content.androidStyle = .data
        #expect(
            try encode(content).message["android"]
                == .object([
                    "priority": .string("NORMAL"), "ttl": .string("3600s"), "collapse_key": .string("match-7"),
                ]))
    }

    @Test func ttlIsClampedToWhatFCMKeeps() throws {
        func ttl(_ expiresAt: Date?) throws -> JSONValue? {
            try encode(NotificationContent(text: LocalizedText(title: "t"), expiresAt: expiresAt)).message["android"]?.objectValue?["ttl"]
        }
        #expect(try ttl(nil) == nil)
        #expect(try ttl(now.addingTimeInterval(-10)) == .string("0s"))
        #expect(try ttl(now) == .string("0s"))
        #expect(try ttl(now.addingTimeInterval(0.5)) == .string("0s"))
        #expect(try ttl(now.addingTimeInterval(2_419_200)) == .string("2419200s"))
        #expect(try ttl(now.addingTimeInterval(90 * 86_400)) == .string("2419200s"))
        #expect(try ttl(Date.distantFuture) == .string("2419200s"))
        let nowOrNever = NotificationContent(text: LocalizedText(title: "t"), expiresAt: now.addingTimeInterval(60), nowOrNever: true)
        #expect(try encode(nowOrNever).message["android"]?.objectValue?["ttl"] == .string("0s"))
    }

    @Test(arguments: ["from", "message_type", "google", "google.c.a.e", "Google_Analytics", "gcm", "gcm.notification.x", "GCM_x", "FROM"])
    func reservedKeysFailTheDelivery(_ key: String) throws {
        let content = NotificationContent(text: LocalizedText(title: "t"), parameters: [key: .string("v"), "fine": .string("ok")])
        let error = try #require(failure(content))
        #expect(error == .reservedDataKey(key))
        #expect(error.description.hasPrefix("reserved_data_key: parameter \"\(key)\" is a key FCM reserves"))
    }

    @Test func keysThatOnlyLookReservedAreFine() throws {
        let content = NotificationContent(parameters: [
            "from_user": .string("a"), "messages": .string("b"), "aps": .string("c"), "collapse_key": .string("d"), "fromage": .null,
            "from": .null,
            // FCM v1 does not list it among reserved keys (docs/compatibility.md §9), and the API takes it.
            "notification": .string("e"),
        ])
        let data = try encode(content).message["data"]?.objectValue
        #expect(data?.keys.sorted() == ["aps", "collapse_key", "from_user", "messages", "n_id", "notification"])
    }

    @Test func storedParametersNamedLikeTheTextKeysLoseToTheText() throws {
        // The API refuses them now; a notification stored before carries the SDK's keys all the same.
        let content = NotificationContent(
            text: LocalizedText(title: "Real"), parameters: ["Title": .string("p1"), "MESSAGE": .string("p2"), "keep": .string("k")]
        )
        #expect(try encode(content).message["data"] == .object(["title": .string("Real"), "keep": .string("k"), "n_id": .string("77")]))
    }

    @Test func payloadsOverFCMsLimitFail() throws {
        // Data and notification count, keys and values: 4096 bytes in all is accepted, one more is not.
        let title = "T"  // "title" + "T" = 6 bytes
        let fixed = 6 + "n_id".utf8.count + "77".utf8.count + "p".utf8.count
        let fits = NotificationContent(
            text: LocalizedText(title: title), parameters: ["p": .string(String(repeating: "x", count: 4096 - fixed))]
        )
        #expect(throws: Never.self) { try encode(fits) }
        let over = NotificationContent(
            text: LocalizedText(title: title), parameters: ["p": .string(String(repeating: "x", count: 4097 - fixed))]
        )
        #expect(failure(over) == .payloadTooLarge(size: 4097))
        #expect(failure(over)?.description == "payload_too_large: 4097 bytes of notification and data, FCM accepts at most 4096")

        // Multi-byte text is counted in UTF-8 bytes: "message" and its text in data, n_id.
        let emoji = NotificationContent(text: LocalizedText(message: String(repeating: "😀", count: 1100)))
        #expect(failure(emoji) == .payloadTooLarge(size: 7 + 4400 + 4 + 2))
        // The notification style carries the text twice, in notification and in data.
        var twice = NotificationContent(text: LocalizedText(message: String(repeating: "m", count: 2040)), androidStyle: .notification)
        #expect(failure(twice) == .payloadTooLarge(size: (4 + 2040) + (7 + 2040) + 4 + 2))
        twice.androidStyle = .data
        #expect(failure(twice) == nil)
    }
}
