import Crypto
import Foundation
import NotifiableCore
import NotifiableTesting
import Testing
import _CryptoExtras

/// What `/admin/apps` does, operators can do from the command line over the database.
@Suite struct AppsAdministrationCommandTests {
    @Test func createShowUpdateRotateSetFCMAndDeleteFromTheCommandLine() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let environment = [
                "DATABASE_URL": url, "NOTIFIABLE_MASTER_KEY": TestDatabase.masterKey.base64,
                "NOTIFIABLE_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path,
            ]
            func run(_ arguments: String...) async throws -> (status: Int32, output: String) {
                try await NotifiableProcess.run(arguments, environment: environment)
            }
            let created = try await run("apps", "create", "--name", "Shop", "--sandbox", "--json")
            #expect(created.status == 0, "\(created.output)")
            let app = try JSONValue.decode(Array(created.output.utf8))
            let id = String(try #require(app["id"]?.intValue))
            let serverAccessID = try #require(app["server_credentials"]?["access_id"]?.stringValue)

            #expect(try await run("apps", "list").output.contains("\(id)\tShop\tsandbox"))
            let updated = try await run("apps", "update", "--app", id, "--name", "Shop 2", "--mode", "live")
            #expect(updated.status == 0 && updated.output.contains("live"), "\(updated.output)")
            #expect(try await run("apps", "update", "--app", id, "--mode", "nowhere").status != 0)
            let defaults = try await run(
                "apps", "update", "--app", id, "--android-style", "notification", "--default-ttl-seconds", "3600",
                "--default-mutable-content", "true"
            )
            #expect(defaults.status == 0, "\(defaults.output)")
            #expect(defaults.output.contains("Android style notification; default time to live 3600 s; mutable-content on"), "\(defaults.output)")
            let withDefaults = try JSONValue.decode(Array(try await run("apps", "show", "--app", id).output.utf8))
            #expect(withDefaults["android_style"] == .string("notification"))
            #expect(withDefaults["default_ttl_seconds"] == .integer(3600))
            #expect(withDefaults["default_mutable_content"] == .bool(true))
            #expect(withDefaults["default_content_available"] == .bool(false))
            #expect(try await run("apps", "update", "--app", id, "--android-style", "loud").status != 0)
            let tooShort = try await run("apps", "update", "--app", id, "--default-ttl-seconds", "59")
            #expect(tooShort.status != 0 && tooShort.output.contains("--default-ttl-seconds must be from 60 to 2419200"), "\(tooShort.output)")

            // Fewer days than NOTIFIABLE_RETENTION_DAYS (30 by default), never more; "default" goes back.
            let shortened = try await run("apps", "update", "--app", id, "--retention-days", "7")
            #expect(shortened.status == 0 && shortened.output.contains("kept 7 days"), "\(shortened.output)")
            let tooLong = try await run("apps", "update", "--app", id, "--retention-days", "31")
            #expect(tooLong.status != 0 && tooLong.output.contains("not lengthen it"), "\(tooLong.output)")
            #expect(try await run("apps", "update", "--app", id, "--retention-days", "week").status != 0)
            let restored = try await run("apps", "update", "--app", id, "--retention-days", "default")
            #expect(restored.status == 0 && restored.output.contains("the service's retention period"), "\(restored.output)")

            // The default Android channel: set, shown, and removed with "none".
            let channel = try await run("apps", "update", "--app", id, "--default-android-channel-id", "orders")
            #expect(channel.status == 0 && channel.output.contains(#"go to "orders""#), "\(channel.output)")
            #expect(try JSONValue.decode(Array(try await run("apps", "show", "--app", id).output.utf8))["default_android_channel_id"] == .string("orders"))
            let noChannel = try await run("apps", "update", "--app", id, "--default-android-channel-id", "none")
            #expect(noChannel.status == 0 && noChannel.output.contains("the app's default channel"), "\(noChannel.output)")
            #expect(try JSONValue.decode(Array(try await run("apps", "show", "--app", id).output.utf8))["default_android_channel_id"] == .null)

            let rotated = try await run("apps", "rotate-credentials", "--app", id, "--role", "server", "--grace-hours", "1", "--json")
            #expect(rotated.status == 0, "\(rotated.output)")
            let rotation = try JSONValue.decode(Array(rotated.output.utf8))
            #expect(rotation["previous"]?[0]?["access_id"]?.stringValue == serverAccessID)
            let newAccessID = try #require(rotation["access_id"]?.stringValue)

            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apps-cli-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let good = folder.appendingPathComponent("sa.json"), keyless = folder.appendingPathComponent("keyless.json")
            let account: [String: String] = [
                "type": "service_account", "project_id": "shop-prod", "client_email": "push@shop-prod.iam.gserviceaccount.com",
                "private_key": key.pemRepresentation, "token_uri": "https://oauth2.googleapis.com/token",
            ]
            try JSONSerialization.data(withJSONObject: account).write(to: good)
            try JSONSerialization.data(withJSONObject: account.filter { $0.key != "private_key" }).write(to: keyless)
            let refused = try await run("apps", "set-fcm", "--app", id, "--service-account-file", keyless.path)
            #expect(refused.status != 0)
            #expect(refused.output.contains("private_key"), "\(refused.output)")
            let set = try await run("apps", "set-fcm", "--app", id, "--service-account-file", good.path)
            #expect(set.status == 0 && set.output.contains("shop-prod"), "\(set.output)")

            // APNs with a host for each environment: debug builds' devices reach the sandbox one.
            let p8 = folder.appendingPathComponent("AuthKey.p8")
            try P256.Signing.PrivateKey().pemRepresentation.write(to: p8, atomically: true, encoding: .utf8)
            let apns = try await run(
                "apps", "set-apns", "--app", id, "--key-id", "ABC123DEFG", "--team-id", "TEAM123456", "--bundle-id", "com.shop.app",
                "--key-file", p8.path, "--endpoint", "https://127.0.0.1:2197", "--sandbox-endpoint", "https://127.0.0.1:2198")
            #expect(apns.status == 0, "\(apns.output)")
            let apnsShown = try JSONValue.decode(Array(try await run("apps", "show", "--app", id).output.utf8))["apns"]
            #expect(apnsShown?["endpoint"]?.stringValue == "https://127.0.0.1:2197")
            #expect(apnsShown?["sandbox_endpoint"]?.stringValue == "https://127.0.0.1:2198")
            #expect(
                try await run(
                    "apps", "set-apns", "--app", id, "--key-id", "ABC123DEFG", "--team-id", "TEAM123456", "--bundle-id", "com.shop.app",
                    "--key-file", p8.path, "--sandbox-endpoint", "http://plain"
                ).status != 0)
            #expect(try await run("apps", "remove-apns", "--app", id).status == 0)

            let shown = try await run("apps", "show", "--app", id)
            #expect(shown.status == 0, "\(shown.output)")
            let details = try JSONValue.decode(Array(shown.output.utf8))
            #expect(details["name"]?.stringValue == "Shop 2")
            #expect(details["fcm"]?["service_account"]?.stringValue == "[redacted]")
            #expect(details["apns"] == .null)
            #expect(details["credentials"]?.arrayValue?.contains { $0["access_id"]?.stringValue == newAccessID } == true)
            let keyLine = key.pemRepresentation.split(separator: "\n")[1]
            #expect(!shown.output.contains(keyLine))

            // Web Push: a key is made once and kept when the contact changes; --rotate replaces it.
            #expect(try await run("apps", "set-webpush", "--app", id, "--subject", "push@example.com").status != 0, "a bare address is refused")
            let made = try await run("apps", "set-webpush", "--app", id, "--subject", "mailto:push@example.com")
            #expect(made.status == 0, "\(made.output)")
            let publicKey = try #require(made.output.split(separator: "\n").last.map(String.init))
            #expect(Base64URL.decode(Substring(publicKey))?.count == 65)
            let kept = try await run("apps", "set-webpush", "--app", id, "--subject", "https://example.com/push-contact")
            #expect(kept.output.hasSuffix(publicKey + "\n") || kept.output.hasSuffix(publicKey), "\(kept.output)")
            let rotated2 = try await run("apps", "set-webpush", "--app", id, "--subject", "mailto:push@example.com", "--rotate")
            #expect(rotated2.status == 0 && !rotated2.output.contains(publicKey), "\(rotated2.output)")
            let webShown = try JSONValue.decode(Array(try await run("apps", "show", "--app", id).output.utf8))["webpush"]
            #expect(webShown?["subject"]?.stringValue == "mailto:push@example.com")
            #expect(webShown?["private_key"]?.stringValue == "[redacted]")
            #expect(try await run("apps", "remove-webpush", "--app", id).status == 0)
            #expect(try await run("apps", "remove-webpush", "--app", id).status != 0)

            #expect(try await run("apps", "revoke-credential", "--app", id, "--access-id", serverAccessID).status == 0)
            #expect(try await run("apps", "remove-fcm", "--app", id).status == 0)
            #expect(try await run("apps", "remove-fcm", "--app", id).status != 0)
            #expect(try await run("apps", "delete", "--app", id).status != 0, "deleting needs --yes")
            #expect(try await run("apps", "delete", "--app", id, "--yes").status == 0)
            #expect(try await run("apps", "show", "--app", id).status != 0)
        }
    }
}
