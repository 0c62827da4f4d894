import Crypto
import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// An app in sandbox mode: its pushes go to the fake gateways built into the worker, are marked
/// sent with `"sandbox": true`, and can be read back, exact payload and all, by operators.
@Suite struct E2ESandboxTests {
    @Test func sandboxPushesAreSentToTheBuiltInGatewayAndListedWithTheirPayloads() async throws {
        try await withTestService(workers: true) { client, service in
            let created = try await client.admin(.post, "/admin/apps", body: #"{"name": "Demo", "delivery_mode": "sandbox"}"#, service: service)
            let appID = try #require(created.json["id"]?.intValue)
            let device = Credential(.device, ofCreatedApp: created.json)
            let server = Credential(.server, ofCreatedApp: created.json)
            let token = String(repeating: "ab", count: 32)
            let deviceID = try await Pipeline.register(client, device, token: token, alias: "alice", language: "fr")
            let id = try await Pipeline.send(
                client, server,
                #"""
                {"title": "Hello", "message": "World", "localized": {"fr": {"title": "Bonjour"}}, "parameters": {"order": 42},
                 "user_aliases": ["alice"]}
                """#)
            #expect(try await Pipeline.settled(service, id))

            let deliveries = try await client.signed(.get, "/api/v1/notifications/\(id)/deliveries", as: server)
            let delivery = try #require(deliveries.json["data"]?[0])
            #expect(delivery["state"]?.stringValue == "sent")
            #expect(delivery["sandbox"] == .bool(true))

            let listed = try await client.admin(.get, "/admin/apps/\(appID)/sandbox/pushes", service: service)
            #expect(listed.status == .ok)
            let pushes = try #require(listed.json["data"]?.arrayValue)
            #expect(pushes.count == 1)
            let push = try #require(pushes.first)
            #expect(push["provider"]?.stringValue == "apns")
            #expect(push["token"]?.stringValue == token)
            #expect(push["device_id"]?.intValue == deviceID)
            #expect(push["notification_id"]?.intValue == id)
            #expect(push["payload"]?["n_id"]?.intValue == id)
            #expect(push["payload"]?["aps"]?["alert"]?["title"]?.stringValue == "Bonjour")
            #expect(push["payload"]?["order"]?.intValue == 42)
            #expect(push["headers"]?["apns-push-type"]?.stringValue == "alert")
            #expect(push["headers"]?["authorization"] == nil)
            // The exact bytes sent, and what they parse to.
            let raw = try #require(push["raw_payload"]?.stringValue)
            #expect(try JSONValue.decode(Array(raw.utf8)) == push["payload"])

            // Filtered by notification, and paged.
            let filtered = try await client.admin(.get, "/admin/apps/\(appID)/sandbox/pushes?notification_id=\(id + 1000)", service: service)
            #expect(filtered.json["data"]?.arrayValue?.isEmpty == true)
            #expect(try await client.admin(.get, "/admin/apps/\(appID)/sandbox/pushes?notification_id=x", service: service).status == .unprocessableContent)
            #expect(try await client.admin(.get, "/admin/apps/999999999/sandbox/pushes", service: service).status == .notFound)

            // The SDK reports the push opened; the counters move.
            let opened = try await client.signed(
                .post, "/api/v1/notifications/\(id)/opened", body: #"{"device_token_id": "\#(deviceID)", "user": {"alias": "alice"}}"#, as: device
            )
            #expect(opened.status == .ok || opened.status == .noContent)
            let counters = try await Pipeline.counters(client, server, id)
            #expect(counters["counters"]?["sent"]?.intValue == 1)
            #expect(counters["counters"]?["opened"]?.intValue == 1)
            #expect(counters["counters"]?["delivered"]?.intValue == 1)
        }
    }

    @Test func androidDevicesGoToTheSandboxFCM() async throws {
        try await withTestService(workers: true) { client, service in
            let app = try await service.createApp()
            _ = try await client.admin(.patch, "/admin/apps/\(app.app.id)", body: #"{"delivery_mode": "sandbox"}"#, service: service)
            let deviceID = try await Pipeline.register(
                client, app.deviceCredential, provider: "fcm", token: "sandbox-android-token", alias: "zoe", language: "fr")
            _ = try await Pipeline.register(client, app.deviceCredential, token: String(repeating: "9f", count: 32), alias: "zoe")
            let id = try await Pipeline.send(
                client, app.serverCredential, #"{"title": "Hi", "localized": {"fr": {"title": "Salut"}}, "user_aliases": ["zoe"]}"#
            )
            #expect(try await Pipeline.settled(service, id))
            let pushes = try await client.admin(.get, "/admin/apps/\(app.app.id)/sandbox/pushes?notification_id=\(id)", service: service)
            let all = try #require(pushes.json["data"]?.arrayValue)
            #expect(Set(all.compactMap { $0["provider"]?.stringValue }) == ["apns", "fcm"])
            let android = try #require(all.first { $0["provider"]?.stringValue == "fcm" })
            #expect(android["device_id"]?.intValue == deviceID)
            #expect(android["payload"]?["message"]?["token"]?.stringValue == "sandbox-android-token")
            #expect(android["payload"]?["message"]?["data"]?["n_id"]?.stringValue == String(id))
            // Data style, the default: the Android SDK reads the title from data.
            #expect(android["payload"]?["message"]?["data"]?["title"]?.stringValue == "Salut")
            #expect(android["payload"]?["message"]?["notification"] == nil)
            #expect(android["headers"]?["authorization"] == nil)
            let counters = try await Pipeline.counters(client, app.serverCredential, id)
            #expect(counters["counters"]?["sent"]?.intValue == 2)
        }
    }

    @Test func aLiveAppWithoutSettingsIsNotSentToTheSandbox() async throws {
        try await withTestService(workers: true) { client, service in
            let app = try await service.createApp()
            _ = try await Pipeline.register(client, app.deviceCredential, token: String(repeating: "cd", count: 32), alias: "bob")
            let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "m", "user_aliases": ["bob"]}"#)
            #expect(try await Pipeline.settled(service, id))
            let deliveries = try await client.signed(.get, "/api/v1/notifications/\(id)/deliveries", as: app.serverCredential)
            #expect(deliveries.json["data"]?[0]?["state"]?.stringValue == "dead")
            #expect(deliveries.json["data"]?[0]?["sandbox"] == .bool(false))
            #expect(deliveries.json["data"]?[0]?["reason"]?.stringValue?.contains("apns_not_configured") == true)
            let listed = try await client.admin(.get, "/admin/apps/\(app.app.id)/sandbox/pushes", service: service)
            #expect(listed.json["data"]?.arrayValue?.isEmpty == true)
        }
    }

    /// A browser of an app in sandbox mode: its message goes to the built-in push service, and the
    /// record shows what the browser reads once it decrypts it, never the VAPID token.
    @Test func aBrowsersSandboxPushIsListedAsTheBrowserReadsIt() async throws {
        try await withTestService(workers: true) { client, service in
            let created = try await client.admin(.post, "/admin/apps", body: #"{"name": "Web demo", "delivery_mode": "sandbox"}"#, service: service)
            let appID = try #require(created.json["id"]?.intValue)
            let device = Credential(.device, ofCreatedApp: created.json)
            let server = Credential(.server, ofCreatedApp: created.json)
            let point = Base64URL.encode(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
            let registered = try await Pipeline.register(
                client, device,
                body:
                    #"{"provider": "webpush", "token": "https://fcm.googleapis.com/fcm/send/sandboxed", "keys": {"p256dh": "\#(point)", "auth": "AAECAwQFBgcICQoLDA0ODw"}, "user_alias": "bea"}"#
            )
            let id = try await Pipeline.send(client, server, #"{"title": "Hello", "message": "Web", "user_aliases": ["bea"]}"#)
            #expect(try await Pipeline.settled(service, id))
            let listed = try await client.admin(.get, "/admin/apps/\(appID)/sandbox/pushes", service: service)
            let push = try #require(listed.json["data"]?[0], "\(String(buffer: listed.body))")
            #expect(push["provider"]?.stringValue == "webpush")
            #expect(push["device_id"]?.intValue == registered)
            #expect(push["payload"]?["n_id"]?.stringValue == String(id))
            #expect(push["payload"]?["title"]?.stringValue == "Hello")
            #expect(push["headers"]?["content-encoding"]?.stringValue == "aes128gcm")
            #expect(push["headers"]?["authorization"] == nil)
        }
    }
}
