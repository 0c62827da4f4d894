import Foundation
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

/// How the pipeline answers APNs' refusals of the app itself, of its token, and of a payload.
@Suite struct E2EGatewayAnswersTests {
    @Test func aRefusedConfigurationFailsFastSurfacesAndRecoversOnceFixed() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                gateway.distrustAllKeys()  // APNs now answers 403 InvalidProviderToken
                let token = Pipeline.token(0x403)
                let device = try await Pipeline.register(client, app.deviceCredential, token: token)

                let first = try await Pipeline.send(client, app.serverCredential, #"{"message": "1", "device_ids": [\#(device)]}"#)
                #expect(try await Pipeline.settled(service, first))
                let story = try await service.describeDeliveries(of: first)
                #expect(try await service.deliveries(of: first, in: "dead") == 1, "\(story)")
                #expect(story.contains("InvalidProviderToken"))
                let requestsAfterFirst = gateway.requestCount

                // Operators see why.
                let admin = try #require(service.configuration.adminToken)
                let settings = try await client.execute(
                    uri: "/admin/apps/\(app.app.id)/apns", method: .get, headers: [.authorization: "Bearer \(admin)"], body: nil)
                #expect(settings.json["misconfiguration"]?.stringValue?.contains("InvalidProviderToken") == true)

                // Nothing more is sent to APNs for the app while it is misconfigured.
                let second = try await Pipeline.send(client, app.serverCredential, #"{"message": "2", "device_ids": [\#(device)]}"#)
                #expect(try await Pipeline.settled(service, second))
                #expect(try await service.deliveries(of: second, in: "dead") == 1)
                #expect(gateway.requestCount == requestsAfterFirst)

                // Fixed settings clear the mark; re-queued deliveries go out.
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                try await Task.sleep(for: .seconds(2.1))
                let requeue = try await client.execute(
                    uri: "/admin/deliveries/dead/requeue", method: .post, headers: [.authorization: "Bearer \(admin)"],
                    body: ByteBuffer(string: #"{"app_id": \#(app.app.id)}"#)
                )
                #expect(requeue.json["requeued"]?.intValue == 2)
                #expect(try await Pipeline.settled(service, first))
                #expect(try await Pipeline.settled(service, second))
                #expect(gateway.pushes(to: token).count == 2)
            }
        }
    }

    @Test func anExpiredProviderTokenIsRefreshedAndTheDeliveryRetried() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0x4031)
                let device = try await Pipeline.register(client, app.deviceCredential, token: token)
                gateway.script(token: token, [.reject(status: 403, reason: "ExpiredProviderToken")])
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "device_ids": [\#(device)]}"#)
                #expect(try await Pipeline.settled(service, id))
                #expect(try await service.deliveries(of: id, in: "sent") == 1)
                #expect(gateway.pushes(to: token).count == 1)
                #expect(try await service.integer("SELECT count(*) FROM apns_settings WHERE misconfigured_at IS NOT NULL") == 0)
            }
        }
    }

    @Test func aPayloadOverAPNsLimitFailsWithoutBeingSent() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x413))
                let long = String(repeating: "w", count: 2000)
                let id = try await Pipeline.send(
                    client, app.serverCredential,
                    #"{"title": "\#(long)", "message": "\#(long)", "subtitle": "\#(long)", "device_ids": [\#(device)]}"#
                )
                #expect(try await Pipeline.settled(service, id))
                let story = try await service.describeDeliveries(of: id)
                #expect(story.hasPrefix("failed"), "\(story)")
                #expect(story.contains("payload_too_large"))
                #expect(gateway.requestCount == 0)
            }
        }
    }
}

/// A wrong APNs environment makes every token "bad"; that must not invalidate a whole app.
@Suite struct E2EBadDeviceTokenTests {
    @Test func aBadTokenIsOnlyBelievedOnceAPNsHasAcceptedAPushForTheApp() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let bad = Pipeline.token(0xBAD), good = Pipeline.token(0x600D)
                let badID = try await Pipeline.register(client, app.deviceCredential, token: bad)
                let goodID = try await Pipeline.register(client, app.deviceCredential, token: good)
                gateway.script(token: bad, Array(repeating: .badDeviceToken, count: 20))

                let first = try await Pipeline.send(client, app.serverCredential, #"{"message": "1", "device_ids": [\#(badID)]}"#)
                let retried = try await service.eventually {
                    try await service.integer("SELECT attempts FROM deliveries WHERE notification_id = \(first)") ?? 0 >= 2
                }
                #expect(retried)
                #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(badID) AND invalidated_at IS NULL") == 1)

                // Once a push is accepted, APNs' verdict on the bad token is believed.
                let second = try await Pipeline.send(client, app.serverCredential, #"{"message": "2", "device_ids": [\#(goodID)]}"#)
                #expect(try await Pipeline.settled(service, second))
                #expect(try await Pipeline.settled(service, first))
                #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(badID) AND invalidated_at IS NOT NULL") == 1)
                #expect(try await service.deliveries(of: first, in: "failed") == 1)
            }
        }
    }
}
