import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// A batch's outcomes and what they entail are written together: dead tokens invalidate their
/// devices (a stale verdict does not), refused settings are marked once, and a batch that fails
/// to record leaves none of it behind.
@Suite struct RecordedEffectsTests {
    @Test func deadTokensAndRefusedSettingsAreRecordedWithTheBatchOncePerDeviceAndApp() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            try await withFakeAPNs { gateway in try await service.connectAPNs(appID: app.app.id, to: gateway) }
            let fresh = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xEF1))
            let stale = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xEF2))
            let kept = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xEF3))
            let ids = [fresh, stale, kept].map(String.init).joined(separator: ", ")
            _ = try await Pipeline.send(client, app.serverCredential, #"{"message": "one", "device_ids": [\#(ids)]}"#)
            let later = try await Pipeline.send(client, app.serverCredential, #"{"message": "two", "device_ids": [\#(fresh)]}"#)
            try await Pipeline.fanOut(service)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            let claimed = try await queue.claim(limit: 3, lease: .seconds(30))
            #expect(claimed.count == 3)
            let byDevice = Dictionary(uniqueKeysWithValues: claimed.map { ($0.deviceID, $0) })
            let version = try #require(
                try await APNsSettingsStore(client: service.postgres, keys: service.configuration.keys, logger: TestDatabase.logger)
                    .settings(appID: app.app.id)?.updatedAt)

            // The stale device registered after the gateway's verdict: it keeps its token.
            let verdictTime = Date()
            try await Task.sleep(for: .milliseconds(20))
            _ = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xEF2))
            func result(_ device: Int64, _ decision: DeliveryDecision) throws -> DeliveryResult {
                DeliveryResult(decision, for: try #require(byDevice[device]), sentAt: verdictTime)
            }
            let effects = try await queue.record([
                try result(fresh, .failedTokenDead(reason: "Unregistered", at: verdictTime)),
                try result(stale, .failedTokenDead(reason: "Unregistered", at: verdictTime)),
                try result(kept, .deadMisconfigured(reason: "InvalidProviderToken", settingsVersion: version)),
            ])
            #expect(effects.invalidatedDevices == [fresh])
            #expect(effects.newlyRefusedSettings.map(\.appID) == [app.app.id])
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE invalidated_at IS NOT NULL") == 1)
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(fresh) AND invalidation_reason = 'Unregistered'") == 1)
            #expect(try await service.integer("SELECT count(*) FROM apns_settings WHERE misconfiguration_reason = 'InvalidProviderToken'") == 1)
            // The invalidated device's other waiting delivery is cancelled in the same transaction.
            #expect(try await service.deliveries(of: later, in: "cancelled") == 1)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE state = 'failed'") == 2)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE state = 'dead'") == 1)
        }
    }

    @Test func aBatchThatCannotBeRecordedLeavesNoDeviceInvalidated() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xEF4))
            _ = try await Pipeline.send(client, app.serverCredential, #"{"message": "one", "device_ids": [\#(device)]}"#)
            try await Pipeline.fanOut(service)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            let delivery = try #require(try await queue.claim(limit: 1, lease: .seconds(30)).first)
            // The devices table refuses the invalidation: the whole transaction fails, states included.
            _ = try await service.postgres.query(
                "CREATE FUNCTION refuse_marks() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$",
                logger: TestDatabase.logger
            )
            _ = try await service.postgres.query(
                "CREATE TRIGGER refuse_marks BEFORE UPDATE ON devices FOR EACH ROW EXECUTE FUNCTION refuse_marks()", logger: TestDatabase.logger
            )
            await #expect(throws: (any Error).self) {
                try await queue.record([DeliveryResult(.failedTokenDead(reason: "BadDeviceToken", at: nil), for: delivery, sentAt: Date())])
            }
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE state = 'running'") == 1)
            _ = try await service.postgres.query("DROP TRIGGER refuse_marks ON devices", logger: TestDatabase.logger)
            let effects = try await queue.record([DeliveryResult(.failedTokenDead(reason: "BadDeviceToken", at: nil), for: delivery, sentAt: Date())])
            #expect(effects.invalidatedDevices == [device])
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE state = 'failed'") == 1)
        }
    }
}
