import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

/// Android devices over FCM HTTP v1, end to end over real PostgreSQL and the fake FCM (HTTP/2
/// over TLS, with its OAuth2 token endpoint): API → fan-out → queue → worker → FCM sender.
@Suite struct E2EFCMTests {
    static func deliveries(_ client: some TestClientProtocol, _ credential: Credential, _ id: Int64) async throws -> [JSONValue] {
        try await client.signed(.get, "/api/v1/notifications/\(id)/deliveries", as: credential).json["data"]?.arrayValue ?? []
    }

    @Test func aLocalizedNotificationReachesAnAndroidDeviceWithNIDInData() async throws {
        try await withFakeFCM { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectFCM(appID: app.app.id, to: gateway)
                let token = "fcm-token-french:APA91b" + String(repeating: "x", count: 40)
                _ = try await Pipeline.register(client, app.deviceCredential, provider: "gcm", token: token, alias: "alice", language: "fr")
                let asked = Date()
                let id = try await Pipeline.send(
                    client, app.serverCredential,
                    #"""
                    {"title": "Hello", "message": "Default", "localized": {"fr": {"title": "Bonjour", "message": "Défaut"}},
                     "parameters": {"screen": "inbox", "count": 3}, "priority": "normal", "collapse_id": "inbox", "ttl_seconds": 600,
                     "user_aliases": ["alice"]}
                    """#)
                #expect(try await Pipeline.settled(service, id))
                let settled = Date().timeIntervalSince(asked)

                let messages = gateway.messages(to: token)
                #expect(messages.count == 1)
                let message = try #require(messages.first)
                // Data style, the default: no notification block; the Android SDK reads the text from data.
                #expect(message.notificationTitle == nil)
                #expect(message.notificationBody == nil)
                #expect(message.data["title"] == "Bonjour")
                #expect(message.data["message"] == "Défaut")
                #expect(message.data["n_id"] == String(id))
                #expect(message.data["screen"] == "inbox")
                #expect(message.data["count"] == "3")
                #expect(message.androidPriority?.uppercased() == "NORMAL")
                #expect(message.androidCollapseKey == "inbox")
                let ttl = try #require(message.androidTTL)
                let seconds = try #require(Double(ttl.dropLast()))
                // What is left of the 600 s when it was sent: no more, and no less than the time it took.
                #expect(ttl.hasSuffix("s") && seconds >= 600 - settled.rounded(.up) - 1 && seconds <= 600, "\(ttl) after \(settled) s")

                let delivery = try #require(try await Self.deliveries(client, app.serverCredential, id).first)
                #expect(delivery["state"]?.stringValue == "sent")
                #expect(delivery["provider"]?.stringValue == "fcm")
                #expect(delivery["gateway_id"]?.stringValue == message.name)
            }
        }
    }

    @Test func unregisteredInvalidatesTheDevice() async throws {
        try await withFakeFCM { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectFCM(appID: app.app.id, to: gateway)
                let token = "fcm-gone-token"
                let deviceID = try await Pipeline.register(client, app.deviceCredential, provider: "fcm", token: token, alias: "bob")
                gateway.script(token: token, [.unregistered])
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "m", "user_aliases": ["bob"]}"#)
                #expect(try await Pipeline.settled(service, id))
                let delivery = try #require(try await Self.deliveries(client, app.serverCredential, id).first)
                #expect(delivery["state"]?.stringValue == "failed")
                #expect(delivery["reason"]?.stringValue?.hasPrefix("UNREGISTERED") == true)
                #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(deviceID) AND invalidated_at IS NOT NULL") == 1)

                // Never targeted again.
                let next = try await Pipeline.send(client, app.serverCredential, #"{"message": "again", "user_aliases": ["bob"]}"#)
                #expect(try await Pipeline.settled(service, next))
                #expect(try await Self.deliveries(client, app.serverCredential, next).isEmpty)
                #expect(gateway.messages(to: token).isEmpty)
            }
        }
    }

    @Test func unavailableWithRetryAfterIsRetriedAfterTheDelayThenSent() async throws {
        try await withFakeFCM { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectFCM(appID: app.app.id, to: gateway)
                let token = "fcm-busy-token"
                _ = try await Pipeline.register(client, app.deviceCredential, provider: "fcm", token: token, alias: "carol")
                gateway.script(token: token, [.unavailable(retryAfterSeconds: 2)])
                let start = Date()
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "m", "user_aliases": ["carol"]}"#)
                #expect(try await Pipeline.settled(service, id))
                let delivery = try #require(try await Self.deliveries(client, app.serverCredential, id).first)
                #expect(delivery["state"]?.stringValue == "sent")
                #expect(delivery["attempts"]?.intValue == 2)
                let accepted = try #require(gateway.messages(to: token).first)
                // The retry policy's own delay is 50 ms in tests: only Retry-After explains two seconds.
                #expect(accepted.receivedAt.timeIntervalSince(start) >= 2)
                #expect(gateway.sendRequestCount == 2)
            }
        }
    }

    @Test func twoHundredConcurrentSendsFetchOneAccessToken() async throws {
        try await withFakeFCM { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectFCM(appID: app.app.id, to: gateway)
                // A slow token endpoint widens the window in which every send wants a token.
                gateway.setTokenLatency(.milliseconds(300))
                try await service.insertDevices(appID: app.app.id, count: 200, tokenSeed: 0xFC, userAlias: "many", provider: .fcm)
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "m", "user_aliases": ["many"]}"#)
                #expect(try await Pipeline.settled(service, id))
                #expect(try await service.deliveries(of: id, in: "sent") == 200)
                // Every device reached; a second push to one happens only where its first answer was
                // lost to the deadline on a loaded machine and the delivery was tried again.
                let retries = try #require(try await service.integer("SELECT sum(attempts - 1)::int8 FROM deliveries WHERE notification_id = \(id)"))
                #expect(gateway.acceptedCount >= 200)
                #expect(Int64(gateway.acceptedCount - 200) <= retries, "\(gateway.acceptedCount) pushes, \(retries) retries")
                #expect(gateway.tokenRequestCount == 1)
                #expect(gateway.tokensIssued == 1)
            }
        }
    }

    @Test func anExpiredAccessTokenIsRefreshedOnceAndTheSendRetried() async throws {
        try await withFakeFCM { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectFCM(appID: app.app.id, to: gateway)
                let token = "fcm-refresh-token"
                _ = try await Pipeline.register(client, app.deviceCredential, provider: "fcm", token: token, alias: "dave")
                let first = try await Pipeline.send(client, app.serverCredential, #"{"message": "one", "user_aliases": ["dave"]}"#)
                #expect(try await Pipeline.settled(service, first))
                #expect(gateway.tokensIssued == 1)

                gateway.expireAccessTokens()
                let second = try await Pipeline.send(client, app.serverCredential, #"{"message": "two", "user_aliases": ["dave"]}"#)
                #expect(try await Pipeline.settled(service, second))
                let delivery = try #require(try await Self.deliveries(client, app.serverCredential, second).first)
                #expect(delivery["state"]?.stringValue == "sent")
                #expect(delivery["attempts"]?.intValue == 1)
                #expect(gateway.tokensIssued == 2)
                #expect(gateway.messages(to: token).count == 2)
            }
        }
    }

    @Test func aMixedAudienceGetsOnePushPerDeviceOnEachGateway() async throws {
        try await withFakeFCM { fcm in
            try await withFakeAPNs { apns in
                try await withTestService(workers: true) { client, service in
                    let app = try await service.createApp()
                    try await service.connectFCM(appID: app.app.id, to: fcm)
                    try await service.connectAPNs(appID: app.app.id, to: apns)
                    let iphone = String(repeating: "1a", count: 32), ipad = String(repeating: "2b", count: 32)
                    _ = try await Pipeline.register(client, app.deviceCredential, token: iphone, alias: "erin")
                    _ = try await Pipeline.register(client, app.deviceCredential, token: ipad, alias: "erin")
                    let pixel = try await Pipeline.register(
                        client, app.deviceCredential, provider: "fcm", token: "pixel-token", alias: "erin")
                    _ = try await Pipeline.register(client, app.deviceCredential, provider: "gcm", token: "tablet-token", alias: "erin")
                    // The pixel is reached by two rules, and still gets one push.
                    let id = try await Pipeline.send(
                        client, app.serverCredential, #"{"message": "everywhere", "user_aliases": ["erin"], "device_ids": [\#(pixel)]}"#
                    )
                    #expect(try await Pipeline.settled(service, id))
                    #expect(apns.pushes(to: iphone).count == 1)
                    #expect(apns.pushes(to: ipad).count == 1)
                    #expect(fcm.messages(to: "pixel-token").count == 1)
                    #expect(fcm.messages(to: "tablet-token").count == 1)
                    #expect(apns.acceptedCount + fcm.acceptedCount == 4)
                    let counters = try await Pipeline.counters(client, app.serverCredential, id)
                    #expect(counters["counters"]?["sent"]?.intValue == 4)
                }
            }
        }
    }

    @Test func aRefusedServiceAccountMarksTheAppMisconfiguredAndFailsFast() async throws {
        try await withFakeFCM { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectFCM(appID: app.app.id, to: gateway)
                try await service.insertDevices(appID: app.app.id, count: 20, tokenSeed: 0xBAD, userAlias: "frank", provider: .fcm)
                gateway.setRandomFailures(rate: 1, seed: 1, outcome: .thirdPartyAuthError)
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "m", "user_aliases": ["frank"]}"#)
                #expect(try await Pipeline.settled(service, id))
                let counters = try await Pipeline.counters(client, app.serverCredential, id)
                #expect(counters["counters"]?["dead"]?.intValue == 20)
                // Fail fast: each delivery asked FCM at most once (no retries, no token refresh).
                let sentToFCM = gateway.sendRequestCount
                #expect(sentToFCM <= 20)
                let settings = try await client.admin(.get, "/admin/apps/\(app.app.id)/fcm", service: service)
                #expect(settings.json["misconfiguration"]?.stringValue?.contains("THIRD_PARTY_AUTH_ERROR") == true)

                // Once marked, the app's next notification does not reach FCM at all.
                let next = try await Pipeline.send(client, app.serverCredential, #"{"message": "again", "user_aliases": ["frank"]}"#)
                #expect(try await Pipeline.settled(service, next))
                #expect(try await Pipeline.counters(client, app.serverCredential, next)["counters"]?["dead"]?.intValue == 20)
                #expect(gateway.sendRequestCount == sentToFCM)
            }
        }
    }
}
