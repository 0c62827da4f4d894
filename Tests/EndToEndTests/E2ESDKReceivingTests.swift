import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

/// What the Notifiable SDKs make of the pushes the service sends, end to end: real PostgreSQL,
/// workers, the fake APNs and FCM gateways, and each accepted push read back through the ports of
/// the SDKs' receiving code (`SDKReceivingRules.swift`, docs/compatibility.md §2 and §4).
@Suite struct E2ESDKReceivingTests {
    /// Registers a device as the SDKs do: locale as language and country (upper-case, or "" for a
    /// language-only locale); no language at all when `language` is nil.
    static func register(
        _ client: some TestClientProtocol, _ credential: Credential, provider: String, token: String, alias: String,
        language: String?, country: String?
    ) async throws -> Int64 {
        try await Pipeline.register(
            client, credential, provider: provider, token: token, alias: alias, language: language, country: country,
            extra: #", "name": "device""#
        )
    }

    /// `message.data` as the Android SDK gets it (`RemoteMessage.getData()`), every value checked to
    /// be a string: FCM refuses any other (docs/compatibility.md §9), and `AcceptedFCMMessage.data`
    /// would silently drop one.
    static func dataMap(_ accepted: AcceptedFCMMessage) throws -> [String: String] {
        let data = try #require(accepted.message["data"]?.objectValue, "no data in \(accepted.bodyString)")
        var map: [String: String] = [:]
        for (key, value) in data {
            guard case .string(let text) = value else {
                Issue.record("data.\(key) is \(value.typeName), not a string: \(accepted.bodyString)")
                continue
            }
            map[key] = text
        }
        return map
    }

    /// The one push `token` got, read by the Android SDK.
    static func androidReads(_ gateway: SandboxFCMGateway, token: String) throws -> (AcceptedFCMMessage, NotifiableAndroidSDK.Message) {
        let messages = gateway.messages(to: token)
        #expect(messages.count == 1, "\(token): \(messages.count) messages")
        let accepted = try #require(messages.first, "nothing reached \(token)")
        return (accepted, NotifiableAndroidSDK.createNotificationFromMap(try dataMap(accepted)))
    }

    /// The one push `token` got, as the iOS SDK's `userInfo`.
    static func iOSReads(_ gateway: SandboxAPNsGateway, token: String) throws -> (AcceptedPush, [String: JSONValue]) {
        let pushes = gateway.pushes(to: token)
        #expect(pushes.count == 1, "\(token): \(pushes.count) pushes")
        let push = try #require(pushes.first, "nothing reached \(token)")
        return (push, try #require(NotifiableIOSSDK.userInfo(payload: push.payload), "not a JSON object: \(push.payloadString)"))
    }

    /// A locale as a device reports it, and the text it must end up showing.
    struct Reader: Sendable {
        var name: String
        var language: String?
        var country: String?
        var title: String
        var subtitle: String
        var message: String
    }

    /// The localized variants give only some fields; each field falls back on its own:
    /// `localized["pt-br"]`, then `localized["pt"]`, then the default.
    static let localizedBody = #"""
        {"title": "Hello", "subtitle": "News", "message": "Default",
         "localized": {"fr": {"title": "Bonjour"},
                       "pt": {"title": "Olá", "message": "Português", "subtitle": "Notícias"},
                       "pt-br": {"message": "Brasil"}},
         "parameters": {"screen": "inbox"}, "user_aliases": ["reader"]}
        """#

    static let readers: [Reader] = [
        Reader(name: "fr-FR", language: "fr", country: "FR", title: "Bonjour", subtitle: "News", message: "Default"),
        // A language-only locale: both SDKs send country "".
        Reader(name: "fr", language: "fr", country: "", title: "Bonjour", subtitle: "News", message: "Default"),
        Reader(name: "pt-BR", language: "pt", country: "BR", title: "Olá", subtitle: "Notícias", message: "Brasil"),
        Reader(name: "pt-PT", language: "pt", country: "PT", title: "Olá", subtitle: "Notícias", message: "Português"),
        Reader(name: "de-DE", language: "de", country: "DE", title: "Hello", subtitle: "News", message: "Default"),
        Reader(name: "none", language: nil, country: nil, title: "Hello", subtitle: "News", message: "Default"),
    ]

    static func androidToken(_ reader: Reader) -> String {
        "sdk-\(reader.name):APA91b" + String(repeating: "r", count: 40)
    }

    /// Four weeks, the default `default_ttl_seconds` of an app.
    static let fourWeeks: Int64 = 2_419_200

    // MARK: - The ports themselves

    @Test func thePortsReadAsTheSDKsSourcesDo() {
        // Integer.valueOf: optional sign, decimal digits of any script, 32 bits.
        #expect(NotifiableAndroidSDK.integerValueOf("42") == 42)
        #expect(NotifiableAndroidSDK.integerValueOf("+7") == 7)
        #expect(NotifiableAndroidSDK.integerValueOf("-2147483648") == Int32.min)
        #expect(NotifiableAndroidSDK.integerValueOf("2147483647") == Int32.max)
        #expect(NotifiableAndroidSDK.integerValueOf("2147483648") == nil)
        #expect(NotifiableAndroidSDK.integerValueOf("٤٢") == 42)
        for refused in ["", "-", "+", "4.0", " 4", "4 ", "0x10", "1e3", "12a"] {
            #expect(NotifiableAndroidSDK.integerValueOf(refused) == nil, "\(refused)")
        }
        // equalsIgnoreCase, with Java's per-character rules.
        #expect(NotifiableAndroidSDK.equalsIgnoreCase("N_ID", "n_id"))
        #expect(NotifiableAndroidSDK.equalsIgnoreCase("tıtle", "title"))
        #expect(NotifiableAndroidSDK.equalsIgnoreCase("TİTLE", "title"))
        #expect(NotifiableAndroidSDK.equalsIgnoreCase("meſſage", "message"))
        #expect(!NotifiableAndroidSDK.equalsIgnoreCase("body", "message"))
        #expect(!NotifiableAndroidSDK.equalsIgnoreCase("nid", "n_id"))

        let read = NotifiableAndroidSDK.createNotificationFromMap(["N_ID": "12", "Title": "T", "MESSAGE": "M", "screen": "inbox"])
        #expect(read.notificationID == 12)
        #expect(read.title == "T")
        #expect(read.message == "M")
        #expect(read.deviceProperties == ["screen": "inbox"])
        #expect(read.ambiguousKeys.isEmpty)
        let crash = NotifiableAndroidSDK.createNotificationFromMap(["n_id": "99999999999"])
        #expect(crash.throwsNumberFormatException)
        #expect(NotifiableAndroidSDK.createNotificationFromMap(["title": "a", "TITLE": "b"]).ambiguousKeys == ["TITLE", "title"])

        let userInfo: [String: JSONValue] = ["n_id": .integer(7), "aps": .object(["alert": .object(["title": .string("T"), "body": .string("B")])])]
        #expect(NotifiableIOSSDK.isValidNotification(userInfo))
        #expect(NotifiableIOSSDK.notificationIDPathComponent(userInfo) == "7")
        #expect(NotifiableIOSSDK.alert(userInfo) == NotifiableIOSSDK.Alert(title: "T", subtitle: nil, body: "B"))
        #expect(!NotifiableIOSSDK.isValidNotification(["aps": .object([:])]))
        // Valid to isValidNotification, yet no NSNumber to report with.
        #expect(NotifiableIOSSDK.isValidNotification(["n_id": .string("7")]))
        #expect(NotifiableIOSSDK.notificationIDPathComponent(["n_id": .string("7")]) == nil)
        #expect(NotifiableIOSSDK.alert(["aps": .object(["alert": .string("B")])])?.body == "B")
    }

    // MARK: - Through the service

    @Test func everyDeviceReadsItsOwnTextAndTheNotificationIDFieldByField() async throws {
        try await withFakeFCM { fcm in
            try await withFakeAPNs { apns in
                try await withTestService(workers: true) { client, service in
                    let app = try await service.createApp()
                    try await service.connectFCM(appID: app.app.id, to: fcm)
                    try await service.connectAPNs(appID: app.app.id, to: apns)
                    var androidIDs: [String: Int64] = [:], iOSIDs: [String: Int64] = [:]
                    for (index, reader) in Self.readers.enumerated() {
                        androidIDs[reader.name] = try await Self.register(
                            client, app.deviceCredential, provider: "gcm", token: Self.androidToken(reader), alias: "reader",
                            language: reader.language, country: reader.country
                        )
                        iOSIDs[reader.name] = try await Self.register(
                            client, app.deviceCredential, provider: "apns", token: Pipeline.token(0x5D0 + index), alias: "reader",
                            language: reader.language, country: reader.country
                        )
                    }

                    let before = Int64(Date().timeIntervalSince1970)
                    let id = try await Pipeline.send(client, app.serverCredential, Self.localizedBody)
                    let after = Int64(Date().timeIntervalSince1970.rounded(.up))
                    #expect(try await Pipeline.settled(service, id))
                    let story = try await service.describeDeliveries(of: id)
                    #expect(try await service.deliveries(of: id, in: "sent") == Int64(2 * Self.readers.count), "\(story)")

                    for (index, reader) in Self.readers.enumerated() {
                        // Android: data only, read by createNotificationFromMap.
                        let (message, android) = try Self.androidReads(fcm, token: Self.androidToken(reader))
                        #expect(android.notificationID.map(Int64.init) == id, "\(reader.name): n_id \(android.rawNotificationID ?? "absent")")
                        #expect(android.title == reader.title, "\(reader.name)")
                        #expect(android.message == reader.message, "\(reader.name)")
                        #expect(android.deviceProperties == ["screen": "inbox"], "\(reader.name): \(message.bodyString)")
                        #expect(android.ambiguousKeys.isEmpty, "\(reader.name): \(android.ambiguousKeys)")
                        #expect(message.message["notification"] == nil, "\(reader.name): a notification block: \(message.bodyString)")
                        #expect(message.android?["notification"] == nil, "\(reader.name): \(message.bodyString)")
                        // No ttl given: the app's four weeks.
                        let ttl = try #require(message.androidTTL, "\(message.bodyString)")
                        let seconds = try #require(Int64(ttl.dropLast()), "\(ttl)")
                        #expect(ttl.hasSuffix("s") && seconds <= Self.fourWeeks && seconds > Self.fourWeeks - 120, "\(ttl)")

                        // iOS: n_id a top-level number, the alert field by field.
                        let (push, userInfo) = try Self.iOSReads(apns, token: Pipeline.token(0x5D0 + index))
                        #expect(NotifiableIOSSDK.isValidNotification(userInfo), "\(reader.name): \(push.payloadString)")
                        #expect(NotifiableIOSSDK.notificationIDPathComponent(userInfo) == String(id), "\(reader.name): \(push.payloadString)")
                        #expect(
                            NotifiableIOSSDK.alert(userInfo) == NotifiableIOSSDK.Alert(title: reader.title, subtitle: reader.subtitle, body: reader.message),
                            "\(reader.name): \(push.payloadString)"
                        )
                        #expect(userInfo["screen"] == .string("inbox"), "\(reader.name)")
                        #expect(push.headers["apns-collapse-id"] == "n\(id)", "\(reader.name): \(push.headers)")
                        let expiration = try #require(Int64(push.headers["apns-expiration"] ?? ""), "\(push.headers)")
                        #expect(expiration >= before + Self.fourWeeks - 1 && expiration <= after + Self.fourWeeks + 1, "\(expiration) vs now \(before)")
                    }

                    // The id each SDK read is the one the service takes back in a status report.
                    let pixel = try Self.androidReads(fcm, token: Self.androidToken(Self.readers[2])).1
                    let androidID = try #require(pixel.notificationID)
                    let fromAndroid = try await client.signed(
                        .post, "/api/v1/notifications/\(androidID)/delivered",
                        body: #"{"device_token_id":"\#(androidIDs[Self.readers[2].name] ?? 0)"}"#, as: app.deviceCredential
                    )
                    #expect(fromAndroid.status == .ok, "\(String(buffer: fromAndroid.body))")
                    let iPhone = try Self.iOSReads(apns, token: Pipeline.token(0x5D0 + 2)).1
                    let iOSID = try #require(NotifiableIOSSDK.notificationIDPathComponent(iPhone))
                    let fromiOS = try await client.signed(
                        .post, "/api/v1/notifications/\(iOSID)/delivered",
                        body: #"{"device_token_id":"\#(iOSIDs[Self.readers[2].name] ?? 0)"}"#, as: app.deviceCredential
                    )
                    #expect(fromiOS.status == .ok, "\(String(buffer: fromiOS.body))")
                    let counters = try await Pipeline.counters(client, app.serverCredential, id)
                    #expect(counters["counters"]?["delivered"]?.intValue == 2)
                }
            }
        }
    }

    @Test func theNotificationStyleAddsABlockAndATagBesideTheSameData() async throws {
        try await withFakeFCM { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectFCM(appID: app.app.id, to: gateway)
                let french = "style-fr:APA91b" + String(repeating: "f", count: 40)
                let brazilian = "style-br:APA91b" + String(repeating: "b", count: 40)
                _ = try await Self.register(client, app.deviceCredential, provider: "gcm", token: french, alias: "reader", language: "fr", country: "FR")
                _ = try await Self.register(client, app.deviceCredential, provider: "gcm", token: brazilian, alias: "reader", language: "pt", country: "BR")

                // The default: data only, so onMessageReceived runs even in the background.
                let shown = try await client.admin(.get, "/admin/apps/\(app.app.id)", service: service)
                #expect(shown.json["android_style"]?.stringValue == "data", "\(String(buffer: shown.body))")
                let dataOnly = try await Pipeline.send(client, app.serverCredential, Self.localizedBody)
                #expect(try await Pipeline.settled(service, dataOnly))
                let (plain, plainRead) = try Self.androidReads(gateway, token: french)
                #expect(plain.message["notification"] == nil, "\(plain.bodyString)")
                #expect(plain.android?["notification"] == nil, "\(plain.bodyString)")
                #expect(plainRead.title == "Bonjour" && plainRead.message == "Default")
                #expect(plainRead.notificationID.map(Int64.init) == dataOnly)

                let switched = try await client.admin(
                    .patch, "/admin/apps/\(app.app.id)", body: #"{"android_style": "notification"}"#, service: service
                )
                #expect(switched.status == .ok, "\(String(buffer: switched.body))")
                #expect(switched.json["android_style"]?.stringValue == "notification")
                gateway.reset()

                // Without a collapse_id: the tag is one per notification.
                let styled = try await Pipeline.send(client, app.serverCredential, Self.localizedBody)
                #expect(try await Pipeline.settled(service, styled))
                for (token, title, message) in [(french, "Bonjour", "Default"), (brazilian, "Olá", "Brasil")] {
                    let (accepted, read) = try Self.androidReads(gateway, token: token)
                    #expect(accepted.notificationTitle == title, "\(accepted.bodyString)")
                    #expect(accepted.notificationBody == message, "\(accepted.bodyString)")
                    #expect(accepted.android?["notification"]?["tag"]?.stringValue == "n\(styled)", "\(accepted.bodyString)")
                    #expect(accepted.androidCollapseKey == nil, "\(accepted.bodyString)")
                    // The same data keys as the data style, for onMessageReceived in the foreground.
                    #expect(read.notificationID.map(Int64.init) == styled)
                    #expect(read.title == title)
                    #expect(read.message == message)
                    #expect(read.deviceProperties == ["screen": "inbox"], "\(accepted.bodyString)")
                    #expect(read.ambiguousKeys.isEmpty)
                }
                // With one: the sender's collapse_id is the tag and the collapse key.
                gateway.reset()
                let collapsing = try await Pipeline.send(
                    client, app.serverCredential, #"{"title": "T", "message": "M", "collapse_id": "inbox", "user_aliases": ["reader"]}"#
                )
                #expect(try await Pipeline.settled(service, collapsing))
                let (tagged, taggedRead) = try Self.androidReads(gateway, token: french)
                #expect(tagged.android?["notification"]?["tag"]?.stringValue == "inbox", "\(tagged.bodyString)")
                #expect(tagged.androidCollapseKey == "inbox")
                #expect(taggedRead.notificationID.map(Int64.init) == collapsing)
                #expect(taggedRead.title == "T" && taggedRead.message == "M")
                #expect(taggedRead.deviceProperties.isEmpty, "\(tagged.bodyString)")
            }
        }
    }

    @Test func apnsExpirationIsTheNotificationsExpiryAndZeroOnlyForATTLOfZero() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0xE4B)
                let device = try await Pipeline.register(client, app.deviceCredential, token: token, alias: "reader")

                // No ttl: the app's default time to live, four weeks.
                var before = Int64(Date().timeIntervalSince1970)
                let lasting = try await Pipeline.send(client, app.serverCredential, #"{"message": "stored", "device_ids": [\#(device)]}"#)
                var after = Int64(Date().timeIntervalSince1970.rounded(.up))
                #expect(try await Pipeline.settled(service, lasting))
                var (push, userInfo) = try Self.iOSReads(gateway, token: token)
                var expiration = try #require(Int64(push.headers["apns-expiration"] ?? ""), "\(push.headers)")
                #expect(expiration >= before + Self.fourWeeks - 1 && expiration <= after + Self.fourWeeks + 1, "\(expiration), sent at \(before)")
                #expect(push.headers["apns-collapse-id"] == "n\(lasting)")
                #expect(NotifiableIOSSDK.notificationIDPathComponent(userInfo) == String(lasting))

                // A ttl: now plus that.
                gateway.reset()
                before = Int64(Date().timeIntervalSince1970)
                let hour = try await Pipeline.send(
                    client, app.serverCredential, #"{"message": "an hour", "ttl_seconds": 3600, "collapse_id": "score", "device_ids": [\#(device)]}"#
                )
                after = Int64(Date().timeIntervalSince1970.rounded(.up))
                #expect(try await Pipeline.settled(service, hour))
                (push, userInfo) = try Self.iOSReads(gateway, token: token)
                expiration = try #require(Int64(push.headers["apns-expiration"] ?? ""), "\(push.headers)")
                #expect(expiration >= before + 3600 - 1 && expiration <= after + 3600 + 1, "\(expiration), sent at \(before)")
                #expect(push.headers["apns-collapse-id"] == "score")
                #expect(NotifiableIOSSDK.notificationIDPathComponent(userInfo) == String(hour))

                // "ttl_seconds": 0: try once, never store — but try: sent once with apns-expiration 0.
                gateway.reset()
                let once = try await Pipeline.send(
                    client, app.serverCredential, #"{"message": "now or never", "ttl_seconds": 0, "device_ids": [\#(device)]}"#
                )
                #expect(try await Pipeline.settled(service, once))
                let story = try await service.describeDeliveries(of: once)
                let pushes = gateway.pushes(to: token)
                #expect(pushes.count == 1, "\(story)")
                #expect(pushes.first?.headers["apns-expiration"] == "0", "\(pushes.first?.headers ?? [:]) \(story)")
                #expect(pushes.first?.headers["apns-collapse-id"] == "n\(once)")
            }
        }
    }

    /// Parameters named `title`, `message` or `n_id` are refused as the Android SDK matches them:
    /// with Java's `equalsIgnoreCase`, which also equates `ı` (dotless i), `İ` (dotted capital I) and
    /// `ſ` (long s) with `i` and `s`. Accepted, such a parameter would reach the device beside the
    /// real key, and which one the SDK shows would be up to Java's HashMap order.
    @Test(arguments: ["tıtle", "TİTLE", "meſſage", "n_İd"])
    func aParameterTheAndroidSDKTakesForItsOwnKeyIsRefused(_ key: String) async throws {
        // What the SDK would do with it: the port says Java matches it with one of its keys.
        let read = NotifiableAndroidSDK.createNotificationFromMap(["n_id": "1", "title": "T", "message": "M", key: "spoof"])
        #expect(read.ambiguousKeys.contains(key))
        #expect(read.deviceProperties[key] == nil)

        // Refused when the notification is accepted: nothing reaches a gateway, so none is needed.
        try await withTestService { client, service in
            let app = try await service.createApp()
            let response = try await client.signed(
                .post, "/api/v1/notifications",
                body: #"{"title": "T", "message": "M", "parameters": {"\#(key)": "spoof"}, "user_aliases": ["reader"]}"#,
                as: app.serverCredential
            )
            #expect(response.status == .unprocessableContent, "\(response.status) \(String(buffer: response.body))")
            #expect(response.errorCode == "reserved_parameter")
        }
    }
}
