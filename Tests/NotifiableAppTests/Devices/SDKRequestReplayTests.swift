import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableSandbox
import NotifiableTesting
import PostgresNIO
import Testing

/// The Notifiable SDKs' own requests, replayed byte for byte as their sources build them
/// (docs/compatibility.md §1 and §3), through the real service: headers, signature, body text,
/// and what the SDKs need of each answer. Signed here from scratch (HMAC-SHA1 over the SDKs'
/// canonical strings), not with the service's own `APIAuth`, so a shared mistake cannot hide.
@Suite struct SDKRequestReplayTests {
    // MARK: - How each SDK builds a request

    /// Notifiable-iOS 1.2.6, `Security/FWTNotifiableAuthenticator.m` and `Network/FWTHTTPRequester.m`:
    /// relative paths (`api/v1/…`) signed as `"/" + path`, `Content-Type: application/json;
    /// charset=utf-8` on every request, `Accept: application/json`, no body hash.
    enum IOSSDK {
        static let contentType = "application/json; charset=utf-8"

        /// `httpDateFormatter`: `EEE',' dd' 'MMM' 'yyyy HH':'mm':'ss 'GMT'`, en_US_POSIX, UTC.
        static func date(_ date: Date) -> String {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(secondsFromGMT: 0)
            formatter.dateFormat = "EEE',' dd' 'MMM' 'yyyy HH':'mm':'ss 'GMT'"
            return formatter.string(from: date)
        }

        static func headers(method: HTTPRequest.Method, path: String, credential: Credential, at now: Date = Date()) -> HTTPFields {
            let date = date(now)
            // `_canonicalStringForPath`: "%@,%@,,%@,%@" with uri = "/" + path.
            let canonical = "\(method.rawValue),\(contentType),,/\(path),\(date)"
            var fields = HTTPFields()
            fields[.contentType] = contentType
            fields[.accept] = "application/json"
            fields[HTTPField.Name("Date")!] = date
            fields[.authorization] = "APIAuth \(credential.accessID):\(hmacSHA1(canonical, key: credential.secretKey))"
            return fields
        }
    }

    /// Notifiable-Android 1.3.5, `networking/RestManager.java` (`RequestInterceptor`) and
    /// `networking/NotifiableService.java`: absolute paths (`/api/v1/…`), the body's media type
    /// `application/json` (no charset) on the wire and in the canonical string, Joda date
    /// `EEE, dd MMM yyyy HH:mm:ss` + " GMT" in en_US, no body hash. OkHttp 3.10's
    /// `BridgeInterceptor` adds `Accept-Encoding: gzip` and its `User-Agent`.
    enum AndroidSDK {
        static let contentType = "application/json"

        static func date(_ date: Date) -> String {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss"
            return formatter.string(from: date) + " GMT"
        }

        static func headers(method: HTTPRequest.Method, path: String, credential: Credential, at now: Date = Date()) -> HTTPFields {
            let date = date(now)
            // `createCanonicalString`: method, body content type, empty hash, encoded path, date.
            let canonical = "\(method.rawValue),\(contentType),,\(path),\(date)"
            var fields = HTTPFields()
            fields[.contentType] = contentType
            fields[HTTPField.Name("Date")!] = date
            fields[.authorization] = "APIAuth \(credential.accessID):\(hmacSHA1(canonical, key: credential.secretKey))"
            fields[.acceptEncoding] = "gzip"
            fields[.userAgent] = "okhttp/3.10.0"
            return fields
        }
    }

    static func hmacSHA1(_ text: String, key: String) -> String {
        Data(HMAC<Insecure.SHA1>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: Data(key.utf8)))).base64EncodedString()
    }

    static func iOS(
        _ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ path: String, _ body: String, as credential: Credential
    ) async throws -> TestResponse {
        try await client.execute(
            uri: "/" + path, method: method, headers: IOSSDK.headers(method: method, path: path, credential: credential),
            body: ByteBuffer(string: body)
        )
    }

    static func android(
        _ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ path: String, _ body: String, as credential: Credential
    ) async throws -> TestResponse {
        try await client.execute(
            uri: path, method: method, headers: AndroidSDK.headers(method: method, path: path, credential: credential),
            body: ByteBuffer(string: body)
        )
    }

    // MARK: - What the SDKs need of an answer

    /// A 2xx JSON object with a `Content-Type` (the Android interceptor reads it on every answer;
    /// the iOS SDK retries any 2xx that is not an object).
    static func expectReadable(_ response: TestResponse, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let body = String(buffer: response.body)
        #expect((200..<300).contains(response.status.code), "\(what): \(response.status) \(body)", sourceLocation: sourceLocation)
        #expect(
            response.headers[.contentType]?.hasPrefix("application/json") == true, "\(what): Content-Type \(response.headers[.contentType] ?? "absent")",
            sourceLocation: sourceLocation)
        #expect(response.json.objectValue != nil, "\(what): not a JSON object: \(body)", sourceLocation: sourceLocation)
    }

    /// The `id` the iOS SDK stores (`response[@"id"]` as an `NSNumber`).
    static func iOSDeviceID(_ response: TestResponse, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int64 {
        expectReadable(response, what, sourceLocation: sourceLocation)
        return try #require(response.json["id"]?.intValue, "\(what): no numeric id in \(String(buffer: response.body))", sourceLocation: sourceLocation)
    }

    /// What Gson makes of the answer as `NotifiableDevice` (docs/compatibility.md §3): `id` a Java
    /// `int`; `name`, `user`, `token`, `created_at` strings and `locale` a `java.util.Locale`, which
    /// Gson reads from a string (our inference from Gson's adapters: an object or array in any of
    /// them would throw).
    static func androidDeviceID(_ response: TestResponse, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int64 {
        expectReadable(response, what, sourceLocation: sourceLocation)
        let id = try #require(response.json["id"]?.intValue, "\(what): no numeric id in \(String(buffer: response.body))", sourceLocation: sourceLocation)
        #expect(Int32(exactly: id) != nil, "\(what): id \(id) does not fit a Java int", sourceLocation: sourceLocation)
        for key in ["name", "user", "token", "locale", "created_at"] {
            switch response.json[key] {
            case nil, .null?, .string?: break
            case let other?: Issue.record("\(what): \(key) is \(other.typeName); Gson wants a string", sourceLocation: sourceLocation)
            }
        }
        return id
    }

    // MARK: - What the service stored

    struct StoredDevice: Equatable {
        var provider: String
        var token: String
        var name: String?
        var userAlias: String?
        var language: String?
        var country: String?
        var customProperties: JSONValue
        var platformProperties: JSONValue
    }

    static func stored(_ service: TestService, _ id: Int64) async throws -> StoredDevice {
        let rows = try await service.postgres.query(
            """
            SELECT provider, token, name, user_alias, language, country, custom_properties::text, platform_properties::text
            FROM devices WHERE id = \(id)
            """,
            logger: TestDatabase.logger
        )
        for try await (provider, token, name, alias, language, country, custom, platform) in rows.decode(
            (String, String, String?, String?, String?, String?, String, String).self
        ) {
            return StoredDevice(
                provider: provider, token: token, name: name, userAlias: alias, language: language, country: country,
                customProperties: try JSONValue.decode(Array(custom.utf8)), platformProperties: try JSONValue.decode(Array(platform.utf8))
            )
        }
        throw StoreCheckError(description: "no device \(id)")
    }

    struct StoreCheckError: Error, CustomStringConvertible { var description: String }

    /// The delivery of `notification` to `device`: whether it was reported delivered and opened.
    static func reported(_ service: TestService, notification: Int64, device: Int64) async throws -> (delivered: Bool, opened: Bool) {
        let delivered = try await service.integer(
            "SELECT count(*) FROM deliveries WHERE notification_id = \(notification) AND device_id = \(device) AND delivered_at IS NOT NULL"
        )
        let opened = try await service.integer(
            "SELECT count(*) FROM deliveries WHERE notification_id = \(notification) AND device_id = \(device) AND opened_at IS NOT NULL"
        )
        return (delivered == 1, opened == 1)
    }

    static func send(_ client: some TestClientProtocol, _ credential: Credential, _ body: String) async throws -> Int64 {
        let response = try await client.signed(.post, "/api/v1/notifications", body: body, as: credential)
        #expect(response.status == .accepted, "\(String(buffer: response.body))")
        return try #require(response.json["id"]?.intValue, "\(String(buffer: response.body))")
    }

    // MARK: - The dates each SDK writes are the service's RFC 1123

    @Test func bothSDKsDatesAreTheHTTPDateForm() {
        let moment = Date(timeIntervalSince1970: 1_551_780_000)  // Tue, 05 Mar 2019 10:00:00 GMT
        #expect(IOSSDK.date(moment) == "Tue, 05 Mar 2019 10:00:00 GMT")
        #expect(AndroidSDK.date(moment) == "Tue, 05 Mar 2019 10:00:00 GMT")
    }

    // MARK: - iOS

    @Test func theIOSSDKsRequestsReplayed() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let credential = app.deviceCredential
                // `NSData+FWTNotifiable`: the token's bytes as lower-case hex, no spaces or brackets.
                let token = (0..<32).map { String(format: "%02x", ($0 * 37 + 11) % 256) }.joined()

                // registerDeviceWithName:userAlias:locale:customProperties:platformProperties: (en-GB).
                // NSJSONWritingPrettyPrinted: two-space indent, " : ", "/" written as "\/"; custom
                // properties a string of compact JSON; platform properties as raw keys.
                let registration = try await Self.iOS(
                    client, .post, "api/v1/device_tokens",
                    #"""
                    {
                      "device_token" : {
                        "provider" : "apns",
                        "name" : "Ana’s iPhone 11\/Pro",
                        "user_alias" : "alice",
                        "token" : "\#(token)",
                        "language" : "en",
                        "country" : "GB",
                        "custom_properties" : "{\"onsite\":true,\"floor\":3}",
                        "app_version" : "2.1",
                        "build" : 412
                      }
                    }
                    """#, as: credential)
                let id = try Self.iOSDeviceID(registration, "register")
                var device = try await Self.stored(service, id)
                #expect(
                    device
                        == StoredDevice(
                            provider: "apns", token: token, name: "Ana’s iPhone 11/Pro", userAlias: "alice", language: "en", country: "gb",
                            customProperties: .object(["onsite": .bool(true), "floor": .integer(3)]),
                            platformProperties: .object(["app_version": .string("2.1"), "build": .integer(412)])
                        ))

                // updateDeviceName: PATCH with the stored user alias, no provider.
                let renamed = try await Self.iOS(
                    client, .patch, "api/v1/device_tokens/\(id)",
                    #"""
                    {
                      "device_token" : {
                        "user_alias" : "alice",
                        "name" : "iPad"
                      }
                    }
                    """#, as: credential)
                Self.expectReadable(renamed, "update name")
                // updateDeviceLocale with a language-only preferred language: country "".
                let french = try await Self.iOS(
                    client, .patch, "api/v1/device_tokens/\(id)",
                    #"""
                    {
                      "device_token" : {
                        "user_alias" : "alice",
                        "language" : "fr",
                        "country" : ""
                      }
                    }
                    """#, as: credential)
                Self.expectReadable(french, "update locale fr")
                device = try await Self.stored(service, id)
                #expect(device.name == "iPad")
                #expect(device.language == "fr")
                #expect(device.country == nil)
                #expect(device.userAlias == "alice")
                let brazilian = try await Self.iOS(
                    client, .patch, "api/v1/device_tokens/\(id)",
                    #"""
                    {
                      "device_token" : {
                        "user_alias" : "alice",
                        "language" : "pt",
                        "country" : "BR"
                      }
                    }
                    """#, as: credential)
                Self.expectReadable(brazilian, "update locale pt-BR")
                device = try await Self.stored(service, id)
                #expect(device.language == "pt" && device.country == "br", "\(device)")

                // A push arrives; the app reports it with the n_id it read and its stored device id,
                // both as strings.
                let notification = try await Self.send(
                    client, app.serverCredential, #"{"title": "Olá", "message": "Oi", "user_aliases": ["alice"]}"#
                )
                #expect(try await service.eventually { gateway.pushes(to: token).count == 1 })
                let userInfo = try #require(try JSONValue.decode(gateway.pushes(to: token).first?.payload ?? []).objectValue)
                guard case .integer(let nID)? = userInfo["n_id"] else {
                    Issue.record("n_id is not a JSON number at the top level: \(userInfo)")
                    return
                }
                #expect(nID == notification)

                let delivered = try await Self.iOS(
                    client, .post, "api/v1/notifications/\(nID)/delivered",
                    #"""
                    {
                      "device_token_id" : "\#(id)"
                    }
                    """#, as: credential)
                Self.expectReadable(delivered, "delivered")
                var report = try await Self.reported(service, notification: notification, device: id)
                #expect(report.delivered && !report.opened)
                let opened = try await Self.iOS(
                    client, .post, "api/v1/notifications/\(nID)/opened",
                    #"""
                    {
                      "device_token_id" : "\#(id)",
                      "user" : {
                        "alias" : "alice"
                      }
                    }
                    """#, as: credential)
                Self.expectReadable(opened, "opened")
                report = try await Self.reported(service, notification: notification, device: id)
                #expect(report.delivered && report.opened)

                // associateDeviceToUser: a POST register of the same token for another user.
                let associated = try await Self.iOS(
                    client, .post, "api/v1/device_tokens",
                    #"""
                    {
                      "device_token" : {
                        "provider" : "apns",
                        "name" : "iPad",
                        "user_alias" : "bob",
                        "token" : "\#(token)",
                        "language" : "pt",
                        "country" : "BR",
                        "custom_properties" : "{\"onsite\":true,\"floor\":3}"
                      }
                    }
                    """#, as: credential)
                #expect(try Self.iOSDeviceID(associated, "associate") == id)
                #expect(try await Self.stored(service, id).userAlias == "bob")

                // unregisterTokenWithCompletionHandler → anonymiseToken: a POST register with
                // user_alias "" and the current locale, nothing else of the device's.
                let anonymised = try await Self.iOS(
                    client, .post, "api/v1/device_tokens",
                    #"""
                    {
                      "device_token" : {
                        "provider" : "apns",
                        "name" : "iPad",
                        "user_alias" : "",
                        "token" : "\#(token)",
                        "language" : "en",
                        "country" : "GB"
                      }
                    }
                    """#, as: credential)
                #expect(try Self.iOSDeviceID(anonymised, "anonymise") == id)
                device = try await Self.stored(service, id)
                #expect(device.userAlias == nil)
                #expect(device.language == "en" && device.country == "gb")
                #expect(device.customProperties == .object(["onsite": .bool(true), "floor": .integer(3)]))
                #expect(try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app.app.id)") == 1)
            }
        }
    }

    // MARK: - Android

    @Test func theAndroidSDKsRequestsReplayed() async throws {
        try await withFakeFCM { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectFCM(appID: app.app.id, to: gateway)
                let credential = app.deviceCredential
                let token = "dQw4w9WgXcQ:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx_replay-" + String(repeating: "k", count: 60)

                // registerDevice(name, token, user, Locale.UK, "gcm", {"onsite": true}): compact
                // JSONObject.toString(), keys in insertion order, custom properties a string.
                let registration = try await Self.android(
                    client, .post, "/api/v1/device_tokens",
                    #"{"device_token":{"name":"Pixel 3","token":"\#(token)","user_alias":"carol","custom_properties":"{\"onsite\":true}","provider":"gcm","language":"en","country":"GB"}}"#,
                    as: credential
                )
                let id = try Self.androidDeviceID(registration, "register")
                var device = try await Self.stored(service, id)
                #expect(
                    device
                        == StoredDevice(
                            provider: "fcm", token: token, name: "Pixel 3", userAlias: "carol", language: "en", country: "gb",
                            customProperties: .object(["onsite": .bool(true)]), platformProperties: .object([:])
                        ))

                // updateDeviceLocale(id, Locale.FRANCE): language and country only.
                let french = try await Self.android(
                    client, .patch, "/api/v1/device_tokens/\(id)", #"{"device_token":{"language":"fr","country":"FR"}}"#, as: credential
                )
                #expect(try Self.androidDeviceID(french, "update locale") == id)
                // updateDeviceName(user, id, name): the alias (non-empty) and the name.
                let renamed = try await Self.android(
                    client, .patch, "/api/v1/device_tokens/\(id)", #"{"device_token":{"user_alias":"carol","name":"Pixel 4"}}"#, as: credential
                )
                #expect(try Self.androidDeviceID(renamed, "update name") == id)
                // updateDeviceCustomProperties(id, {"floor": 3}).
                let custom = try await Self.android(
                    client, .patch, "/api/v1/device_tokens/\(id)", #"{"device_token":{"custom_properties":"{\"floor\":3}"}}"#, as: credential
                )
                #expect(try Self.androidDeviceID(custom, "update custom properties") == id)
                device = try await Self.stored(service, id)
                #expect(device.language == "fr" && device.country == "fr", "\(device)")
                #expect(device.name == "Pixel 4")
                #expect(device.userAlias == "carol")
                #expect(device.customProperties == .object(["floor": .integer(3)]))

                // A push arrives; the sample app reports delivered at once with the n_id from data
                // and its stored device id, then opened without any user.
                let notification = try await Self.send(
                    client, app.serverCredential, #"{"title": "Bonjour", "message": "Salut", "user_aliases": ["carol"]}"#
                )
                #expect(try await service.eventually { gateway.messages(to: token).count == 1 })
                let data = try #require(gateway.messages(to: token).first?.data)
                let nID = try #require(data["n_id"], "no n_id in data: \(data)")
                #expect(nID == String(notification))
                #expect(data["title"] == "Bonjour" && data["message"] == "Salut", "\(data)")

                let delivered = try await Self.android(
                    client, .post, "/api/v1/notifications/\(nID)/delivered", #"{"device_token_id":"\#(id)"}"#, as: credential
                )
                Self.expectReadable(delivered, "delivered")
                let opened = try await Self.android(
                    client, .post, "/api/v1/notifications/\(nID)/opened", #"{"device_token_id":"\#(id)"}"#, as: credential
                )
                Self.expectReadable(opened, "opened")
                let report = try await Self.reported(service, notification: notification, device: id)
                #expect(report.delivered && report.opened)

                // The sample sends "-1" before it has registered: refused, and still an answer the
                // interceptor can read (a Content-Type on every answer).
                let unregistered = try await Self.android(
                    client, .post, "/api/v1/notifications/\(nID)/delivered", #"{"device_token_id":"-1"}"#, as: credential
                )
                #expect(unregistered.status == .notFound, "\(unregistered.status) \(String(buffer: unregistered.body))")
                #expect(unregistered.headers[.contentType]?.hasPrefix("application/json") == true)

                // unregisterDevice(id): PATCH with an empty alias; any 2xx.
                let unregister = try await Self.android(
                    client, .patch, "/api/v1/device_tokens/\(id)", #"{"device_token":{"user_alias":""}}"#, as: credential
                )
                Self.expectReadable(unregister, "unregister")
                #expect(try await Self.stored(service, id).userAlias == nil)
                #expect(try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app.app.id)") == 1)
            }
        }
    }

    /// `assignDeviceToUser` / `unassignDeviceFromUser` (NotifiableManager.java) re-register a device
    /// the app registered before — "The device must have been registered before this method is
    /// called" — through `registerDeviceForUser` / `registerAnonymousDevice` with locale null and
    /// provider null: a POST with no `provider` key and the fallback locale `"en"`/`"us"`
    /// (`LocaleParser.populateJSONObject`). The SDK needs a 2xx device back: the provider is the
    /// stored device's.
    @Test func theAndroidSDKsAssignAndUnassignReRegisterWithoutProvider() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let credential = app.deviceCredential
            let token = "eYx7:APA91bAssign-" + String(repeating: "a", count: 60)
            let registration = try await Self.android(
                client, .post, "/api/v1/device_tokens",
                #"{"device_token":{"name":"Pixel 4","token":"\#(token)","provider":"gcm","language":"de","country":"DE"}}"#, as: credential
            )
            let id = try Self.androidDeviceID(registration, "anonymous register")
            #expect(try await Self.stored(service, id).userAlias == nil)

            let assigned = try await Self.android(
                client, .post, "/api/v1/device_tokens",
                #"{"device_token":{"name":"Pixel 4","token":"\#(token)","user_alias":"dave","language":"en","country":"us"}}"#, as: credential
            )
            #expect(try Self.androidDeviceID(assigned, "assignDeviceToUser") == id)
            let device = try await Self.stored(service, id)
            #expect(device.userAlias == "dave")
            #expect(device.provider == "fcm")
            #expect(device.language == "en" && device.country == "us", "\(device)")

            // The device has a user (registered the ordinary way) for the unassign to undo.
            let owned = try await Self.android(
                client, .post, "/api/v1/device_tokens",
                #"{"device_token":{"name":"Pixel 4","token":"\#(token)","user_alias":"dave","provider":"gcm","language":"en","country":"GB"}}"#,
                as: credential
            )
            #expect(try Self.androidDeviceID(owned, "register for dave") == id)
            #expect(try await Self.stored(service, id).userAlias == "dave")

            let unassigned = try await Self.android(
                client, .post, "/api/v1/device_tokens",
                #"{"device_token":{"name":"Pixel 4","token":"\#(token)","language":"en","country":"us"}}"#, as: credential
            )
            #expect(try Self.androidDeviceID(unassigned, "unassignDeviceFromUser") == id)
            let anonymous = try await Self.stored(service, id)
            #expect(anonymous.userAlias == nil)
            #expect(anonymous.country == "us", "\(anonymous)")
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app.app.id)") == 1)
        }
    }
}
