import Crypto
import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing
import _CryptoExtras

/// Operators manage apps through `/admin/apps` without touching the database.
@Suite struct AppAdministrationTests {
    static func credential(_ json: JSONValue?, role: CredentialRole) throws -> Credential {
        Credential(
            role: role, accessID: try #require(json?["access_id"]?.stringValue), secretKey: try #require(json?["secret_key"]?.stringValue)
        )
    }

    @Test func createReadListRenameSwitchModeAndDelete() async throws {
        try await withTestService { client, service in
            let created = try await client.admin(.post, "/admin/apps", body: #"{"name": " Shop ", "delivery_mode": "sandbox"}"#, service: service)
            #expect(created.status == .created)
            #expect(Set(created.json.objectValue?.keys.map { $0 } ?? []) == ["id", "name", "device_credentials", "server_credentials"])
            let id = try #require(created.json["id"]?.intValue)
            let device = try Self.credential(created.json["device_credentials"], role: .device)
            #expect(try await client.signed(.get, "/api/v1/device_tokens?user_alias=a", as: device).status == .ok)

            let shown = try await client.admin(.get, "/admin/apps/\(id)", service: service)
            #expect(shown.status == .ok)
            #expect(shown.json["name"]?.stringValue == "Shop")
            #expect(shown.json["delivery_mode"]?.stringValue == "sandbox")
            #expect(shown.json["apns"] == .null)
            #expect(shown.json["fcm"] == .null)
            let credentials = try #require(shown.json["credentials"]?.arrayValue)
            #expect(Set(credentials.compactMap { $0["role"]?.stringValue }) == ["device", "server"])
            #expect(credentials.allSatisfy { $0["expires_at"] == .null })
            #expect(!shown.bodyText.contains(device.secretKey))

            let listed = try await client.admin(.get, "/admin/apps", service: service)
            #expect(listed.json["data"]?.arrayValue?.contains { $0["id"]?.intValue == id } == true)

            let renamed = try await client.admin(.patch, "/admin/apps/\(id)", body: #"{"name": "Shop 2", "delivery_mode": "live"}"#, service: service)
            #expect(renamed.status == .ok)
            #expect(renamed.json["name"]?.stringValue == "Shop 2")
            #expect(renamed.json["delivery_mode"]?.stringValue == "live")
            #expect(renamed.json["retention_days"] == .null, "the service's period")

            // An app may keep fewer days than the service (30 here), and go back to its period.
            let shortened = try await client.admin(.patch, "/admin/apps/\(id)", body: #"{"retention_days": 7}"#, service: service)
            #expect(shortened.json["retention_days"]?.intValue == 7, "\(shortened.bodyText)")
            #expect(try await client.admin(.get, "/admin/apps/\(id)", service: service).json["retention_days"]?.intValue == 7)
            #expect(try await service.integer("SELECT retention_days FROM apps WHERE id = \(id)") == 7)
            let renamedAgain = try await client.admin(.patch, "/admin/apps/\(id)", body: #"{"name": "Shop 3"}"#, service: service)
            #expect(renamedAgain.json["retention_days"]?.intValue == 7, "a field left out stays as it was")
            let restored = try await client.admin(.patch, "/admin/apps/\(id)", body: #"{"retention_days": null}"#, service: service)
            #expect(restored.json["retention_days"] == .null, "\(restored.bodyText)")
            #expect(try await service.integer("SELECT count(*) FROM apps WHERE id = \(id) AND retention_days IS NULL") == 1)

            // Give the app something of everything it owns, then delete it.
            let server = try Self.credential(created.json["server_credentials"], role: .server)
            let registered = try await client.signed(
                .post, "/api/v1/device_tokens", body: #"{"provider": "fcm", "token": "tok-1", "user_alias": "a"}"#, as: device
            )
            let deviceID = try #require(registered.json["id"]?.intValue)
            let sent = try await client.signed(.post, "/api/v1/notifications", body: #"{"message": "m", "user_aliases": ["a"]}"#, as: server)
            let notificationID = try #require(sent.json["id"]?.intValue)
            try await service.postgres.query(
                "INSERT INTO deliveries (notification_id, app_id, device_id) VALUES (\(notificationID), \(id), \(deviceID))",
                logger: TestDatabase.logger
            )
            #expect(try await client.admin(.delete, "/admin/apps/\(id)", service: service).status == .noContent)
            let left = try await service.integer(
                """
                SELECT (SELECT count(*) FROM devices WHERE app_id = \(id)) + (SELECT count(*) FROM notifications WHERE app_id = \(id))
                     + (SELECT count(*) FROM deliveries WHERE app_id = \(id)) + (SELECT count(*) FROM app_credentials WHERE app_id = \(id))
                """
            )
            #expect(left == 0)
            #expect(try await client.admin(.get, "/admin/apps/\(id)", service: service).status == .notFound)
            #expect(try await client.admin(.delete, "/admin/apps/\(id)", service: service).status == .notFound)
            #expect(try await client.signed(.get, "/api/v1/device_tokens?user_alias=a", as: device).status == .unauthorized)
        }
    }

    @Test func badInputIsRefusedNamingTheField() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let cases: [(String, String, String, String)] = [
                ("POST", "/admin/apps", #"{}"#, "name"),
                ("POST", "/admin/apps", #"{"name": ""}"#, "name"),
                ("POST", "/admin/apps", #"{"name": 7}"#, "name"),
                ("POST", "/admin/apps", #"{"name": "x", "delivery_mode": "fake"}"#, "delivery_mode"),
                ("POST", "/admin/apps", #"{"name": "x", "colour": "red"}"#, "colour"),
                ("PATCH", "/admin/apps/\(app.app.id)", #"{"name": ""}"#, "name"),
                ("PATCH", "/admin/apps/\(app.app.id)", #"{"name": "\#(String(repeating: "n", count: 256))"}"#, "name"),
                // 200 characters, 400 code points: PostgreSQL counts the latter.
                ("PATCH", "/admin/apps/\(app.app.id)", #"{"name": "\#(String(repeating: "e\u{301}", count: 200))"}"#, "name"),
                ("POST", "/admin/apps/\(app.app.id)/credentials/rotate", #"{}"#, "role"),
                ("POST", "/admin/apps/\(app.app.id)/credentials/rotate", #"{"role": "admin"}"#, "role"),
                ("POST", "/admin/apps/\(app.app.id)/credentials/rotate", #"{"role": "device", "grace_seconds": -1}"#, "grace_seconds"),
                ("POST", "/admin/apps/\(app.app.id)/credentials/rotate", #"{"role": "device", "grace_seconds": "1d"}"#, "grace_seconds"),
                ("PATCH", "/admin/apps/\(app.app.id)", #"{"android_style": "loud"}"#, "android_style"),
                ("PATCH", "/admin/apps/\(app.app.id)", #"{"default_ttl_seconds": 59}"#, "default_ttl_seconds"),
                ("PATCH", "/admin/apps/\(app.app.id)", #"{"default_ttl_seconds": 2419201}"#, "default_ttl_seconds"),
                ("PATCH", "/admin/apps/\(app.app.id)", #"{"default_mutable_content": "yes"}"#, "default_mutable_content"),
                ("PATCH", "/admin/apps/\(app.app.id)", #"{"retention_days": 0}"#, "retention_days"),
                ("PATCH", "/admin/apps/\(app.app.id)", #"{"retention_days": "7"}"#, "retention_days"),
                // Longer than the service's NOTIFIABLE_RETENTION_DAYS (30): days are dropped for every app at once.
                ("PATCH", "/admin/apps/\(app.app.id)", #"{"retention_days": 31}"#, "retention_days"),
            ]
            for (method, uri, body, field) in cases {
                let answer = try await client.admin(method == "POST" ? .post : .patch, uri, body: body, service: service)
                #expect(answer.status == .unprocessableContent, "\(method) \(uri) \(body): \(answer.bodyText)")
                #expect(answer.errorField == field, "\(method) \(uri) \(body): \(answer.bodyText)")
            }
            #expect(try await client.admin(.post, "/admin/apps", body: "{not json", service: service).status == .badRequest)
            #expect(try await client.admin(.patch, "/admin/apps/999999999", body: #"{"name": "x"}"#, service: service).status == .notFound)
            #expect(
                try await client.admin(.post, "/admin/apps/999999999/credentials/rotate", body: #"{"role": "device"}"#, service: service).status == .notFound)
            #expect(try await client.admin(.get, "/admin/apps/abc", service: service).status == .notFound)
            let unauthenticated = try await client.execute(uri: "/admin/apps", method: .get, headers: [:], body: nil)
            #expect(unauthenticated.status == .unauthorized)
        }
    }

    /// The push defaults: shown with the app, changed one by one, applied to notifications
    /// accepted afterwards, and kept by each notification as it was accepted.
    @Test func pushDefaultsAreShownChangedAndStampedOnNewNotifications() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let shown = try await client.admin(.get, "/admin/apps/\(app.app.id)", service: service)
            #expect(shown.json["android_style"] == .string("data"))
            #expect(shown.json["default_ttl_seconds"] == .integer(2_419_200))
            #expect(shown.json["default_mutable_content"] == .bool(false))
            #expect(shown.json["default_content_available"] == .bool(false))

            /// The stored content of a new notification, and its answer's expires_at in seconds from now.
            func send() async throws -> (content: [String: JSONValue], expiresIn: Double) {
                let answer = try await client.signed(.post, "/api/v1/notifications", body: #"{"title": "t", "all": true}"#, as: app.serverCredential)
                let id = try #require(answer.json["id"]?.intValue)
                #expect(answer.json["expires_at"]?.stringValue != nil)
                var stored = "", expiresIn = 0.0
                for try await (text, seconds) in try await service.postgres.query(
                    "SELECT content::text, extract(epoch FROM expires_at - now())::float8 FROM notifications WHERE id = \(id)",
                    logger: TestDatabase.logger
                ).decode((String, Double).self) { (stored, expiresIn) = (text, seconds) }
                return (try #require(try JSONValue.decode(Array(stored.utf8)).objectValue), expiresIn)
            }
            let before = try await send()
            #expect(before.content["android_style"] == .string("data"))
            #expect(before.content["mutable_content"] == .bool(false))
            #expect(abs(before.expiresIn - 2_419_200) < 60)

            let changed = try await client.admin(
                .patch, "/admin/apps/\(app.app.id)",
                body: #"{"android_style": "notification", "default_ttl_seconds": 3600, "default_mutable_content": true, "default_content_available": true}"#,
                service: service
            )
            #expect(changed.status == .ok)
            #expect(changed.json["android_style"] == .string("notification"))
            #expect(changed.json["default_ttl_seconds"] == .integer(3600))
            let after = try await send()
            #expect(after.content["android_style"] == .string("notification"))
            #expect(after.content["mutable_content"] == .bool(true))
            #expect(after.content["content_available"] == .bool(true))
            #expect(abs(after.expiresIn - 3600) < 60)

            // One field at a time leaves the others.
            let one = try await client.admin(.patch, "/admin/apps/\(app.app.id)", body: #"{"default_content_available": false}"#, service: service)
            #expect(one.json["android_style"] == .string("notification"))
            #expect(one.json["default_content_available"] == .bool(false))
            #expect(one.json["default_mutable_content"] == .bool(true))
        }
    }

    /// A rollout needs both pairs to work for a while: old and new are accepted during the grace
    /// period, and the old one is refused after it.
    @Test func rotatedCredentialsWorkDuringGraceAndNotAfter() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let path = "/api/v1/notifications?limit=1"
            let rotated = try await client.admin(
                .post, "/admin/apps/\(app.app.id)/credentials/rotate", body: #"{"role": "server", "grace_seconds": 10}"#, service: service
            )
            // The grace began before this answer; the checks within it have 10 s, ample even starved.
            let answered = ContinuousClock.now
            #expect(rotated.status == .created)
            let new = try Self.credential(rotated.json, role: .server)
            #expect(new.accessID != app.serverCredential.accessID)
            #expect(rotated.json["previous"]?[0]?["access_id"]?.stringValue == app.serverCredential.accessID)

            #expect(try await client.signed(.get, path, as: app.serverCredential).status == .ok)
            #expect(try await client.signed(.get, path, as: new).status == .ok)
            // The device pair was not rotated and is untouched.
            #expect(try await client.signed(.get, "/api/v1/device_tokens?user_alias=a", as: app.deviceCredential).status == .ok)

            try await Task.sleep(until: answered + .milliseconds(10_200))
            let refused = try await client.signed(.get, path, as: app.serverCredential)
            #expect(refused.status == .unauthorized)
            #expect(refused.errorCode == "unknown_access_id")
            #expect(try await client.signed(.get, path, as: new).status == .ok)

            let shown = try await client.admin(.get, "/admin/apps/\(app.app.id)", service: service)
            let servers = shown.json["credentials"]?.arrayValue?.filter { $0["role"]?.stringValue == "server" } ?? []
            #expect(servers.compactMap { $0["access_id"]?.stringValue } == [new.accessID])
        }
    }

    @Test func rotatingWithNoGraceOrRevokingEndsTheOldPairAtOnce() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let path = "/api/v1/device_tokens?user_alias=a"
            let rotated = try await client.admin(
                .post, "/admin/apps/\(app.app.id)/credentials/rotate", body: #"{"role": "device", "grace_seconds": 0}"#, service: service
            )
            let new = try Self.credential(rotated.json, role: .device)
            #expect(try await client.signed(.get, path, as: app.deviceCredential).status == .unauthorized)
            #expect(try await client.signed(.get, path, as: new).status == .ok)

            // Default grace is a day; revoking ends it now.
            let again = try await client.admin(.post, "/admin/apps/\(app.app.id)/credentials/rotate", body: #"{"role": "device"}"#, service: service)
            let expires = try #require(again.json["previous"]?[0]?["expires_at"]?.stringValue)
            let expiry = try #require(ISO8601DateFormatter.withFractions.date(from: expires))
            #expect(abs(expiry.timeIntervalSinceNow - 86_400) < 60)
            #expect(try await client.signed(.get, path, as: new).status == .ok)
            #expect(try await client.admin(.delete, "/admin/apps/\(app.app.id)/credentials/\(new.accessID)", service: service).status == .noContent)
            #expect(try await client.signed(.get, path, as: new).status == .unauthorized)
            #expect(try await client.admin(.delete, "/admin/apps/\(app.app.id)/credentials/\(new.accessID)", service: service).status == .notFound)
        }
    }

    @Test func apnsSettingsAreValidatedStoredRedactedAndRemoved() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let key = P256.Signing.PrivateKey()
            func body(key: String, bundleID: String = "com.example.app") -> String {
                let settings: JSONValue = .object([
                    "key_id": .string("KEY1234567"), "team_id": .string("TEAM123456"), "bundle_id": .string(bundleID),
                    "private_key": .string(key), "environment": .string("sandbox"),
                ])
                return String(decoding: try! JSONEncoder().encode(settings), as: UTF8.self)
            }
            let uri = "/admin/apps/\(app.app.id)/apns"
            let notP256 = try await client.admin(.put, uri, body: body(key: P384.Signing.PrivateKey().pemRepresentation), service: service)
            #expect(notP256.status == .unprocessableContent)
            #expect(notP256.errorField == "private_key")
            let garbage = try await client.admin(.put, uri, body: body(key: "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----"), service: service)
            #expect(garbage.errorField == "private_key")
            let noBundle = try await client.admin(.put, uri, body: body(key: key.pemRepresentation, bundleID: ""), service: service)
            #expect(noBundle.errorField == "bundle_id")

            let saved = try await client.admin(.put, uri, body: body(key: key.pemRepresentation), service: service)
            #expect(saved.status == .ok)
            let shown = try await client.admin(.get, uri, service: service)
            #expect(shown.json["key_id"]?.stringValue == "KEY1234567")
            #expect(shown.json["private_key"]?.stringValue == "[redacted]")
            let keyBody = Self.pemBody(key.pemRepresentation)
            for answer in [saved, shown, try await client.admin(.get, "/admin/apps/\(app.app.id)", service: service)] {
                #expect(!answer.bodyText.contains(keyBody))
            }
            #expect(try await client.admin(.delete, uri, service: service).status == .noContent)
            #expect(try await client.admin(.get, uri, service: service).status == .notFound)
            #expect(try await client.admin(.delete, uri, service: service).status == .notFound)
        }
    }

    @Test func fcmSettingsAreValidatedStoredRedactedAndRemoved() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let uri = "/admin/apps/\(app.app.id)/fcm"
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            func account(_ fields: [String: String]) -> String {
                var object: [String: JSONValue] = [
                    "type": .string("service_account"), "project_id": .string("shop-prod"),
                    "client_email": .string("push@shop-prod.iam.gserviceaccount.com"), "private_key": .string(key.pemRepresentation),
                    "token_uri": .string("https://oauth2.googleapis.com/token"),
                ]
                for (name, value) in fields { object[name] = value.isEmpty ? nil : .string(value) }
                return String(decoding: try! JSONEncoder().encode(JSONValue.object(["service_account": .object(object)])), as: UTF8.self)
            }
            let noKey = try await client.admin(.put, uri, body: account(["private_key": ""]), service: service)
            #expect(noKey.status == .unprocessableContent)
            #expect(noKey.errorField == "service_account.private_key", "\(noKey.bodyText)")
            let notRSA = try await client.admin(.put, uri, body: account(["private_key": P256.Signing.PrivateKey().pemRepresentation]), service: service)
            #expect(notRSA.errorField == "service_account.private_key", "\(notRSA.bodyText)")
            let noProject = try await client.admin(.put, uri, body: account(["project_id": ""]), service: service)
            #expect(noProject.errorField == "service_account.project_id", "\(noProject.bodyText)")
            #expect(try await client.admin(.put, uri, body: #"{"service_account": 5}"#, service: service).errorField == "service_account")
            #expect(try await client.admin(.put, uri, body: #"{"service_account": "{not json"}"#, service: service).status == .unprocessableContent)

            let saved = try await client.admin(.put, uri, body: account([:]), service: service)
            #expect(saved.status == .ok, "\(saved.bodyText)")
            let shown = try await client.admin(.get, uri, service: service)
            #expect(shown.json["project_id"]?.stringValue == "shop-prod")
            #expect(shown.json["client_email"]?.stringValue == "push@shop-prod.iam.gserviceaccount.com")
            #expect(shown.json["service_account"]?.stringValue == "[redacted]")
            let app2 = try await client.admin(.get, "/admin/apps/\(app.app.id)", service: service)
            #expect(app2.json["fcm"]?["project_id"]?.stringValue == "shop-prod")
            let keyBody = Self.pemBody(key.pemRepresentation)
            for answer in [saved, shown, app2] {
                #expect(!answer.bodyText.contains(String(keyBody.prefix(64))))
            }
            #expect(try await client.admin(.delete, uri, service: service).status == .noContent)
            #expect(try await client.admin(.get, uri, service: service).status == .notFound)
        }
    }

    /// A refusal of settings an operator has since replaced must not mark the new ones.
    @Test func onlyTheRefusedVersionOfSettingsIsMarkedMisconfigured() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let store = APNsSettingsStore(client: service.postgres, keys: service.configuration.keys, logger: TestDatabase.logger)
            let settings = APNsSettings(
                keyID: "K1", teamID: "T1", bundleID: "com.example.app", privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation,
                environment: .sandbox
            )
            #expect(try await store.save(settings, appID: app.app.id))
            let refused = try #require(try await store.settings(appID: app.app.id)?.updatedAt)
            try await Task.sleep(for: .milliseconds(20))
            #expect(try await store.save(settings, appID: app.app.id))
            let current = try #require(try await store.settings(appID: app.app.id)?.updatedAt)

            #expect(try await store.markMisconfigured(appID: app.app.id, reason: "BadTopic", settingsVersion: refused) == false)
            #expect(try await client.admin(.get, "/admin/apps/\(app.app.id)/apns", service: service).json["misconfiguration"] == nil)
            #expect(try await store.markMisconfigured(appID: app.app.id, reason: "BadTopic", settingsVersion: current))
            #expect(try await client.admin(.get, "/admin/apps/\(app.app.id)/apns", service: service).json["misconfiguration"]?.stringValue == "BadTopic")
        }
    }

    /// The base64 body of a PEM, without armour or line breaks: what would leak if the key did.
    static func pemBody(_ pem: String) -> String {
        pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }
}

extension TestResponse {
    var bodyText: String { String(buffer: body) }
}

extension ISO8601DateFormatter {
    nonisolated(unsafe) static let withFractions: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}

extension AppAdministrationTests {
    /// Reading settings back never opens the secret: it works while the master key that sealed
    /// it is missing, and says which key that is.
    @Test func settingsReadBackWithoutOpeningTheSecret() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let other = MasterKey.generate()
            let store = APNsSettingsStore(client: service.postgres, keys: MasterKeyring(current: other), logger: TestDatabase.logger)
            let settings = APNsSettings(
                keyID: "K2", teamID: "T2", bundleID: "com.example.app", privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation,
                environment: .production
            )
            #expect(try await store.save(settings, appID: app.app.id))
            let shown = try await client.admin(.get, "/admin/apps/\(app.app.id)/apns", service: service)
            #expect(shown.status == .ok, "\(shown.bodyText)")
            #expect(shown.json["master_key_id"]?.stringValue == other.id)
            #expect(shown.json["endpoint"]?.stringValue == "https://api.push.apple.com")
            #expect(try await client.admin(.get, "/admin/apps/\(app.app.id)", service: service).json["apns"]?["key_id"]?.stringValue == "K2")
        }
    }
}
