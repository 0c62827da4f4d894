import Crypto
import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// An app's device counts are kept by the devices table's trigger and folded by the queue's
/// maintenance; read at any moment, before or after a fold, they equal a recount of the devices,
/// whatever path changed them: registration through the API, a change of token onto another
/// row (a merge), invalidation by a gateway, unregistration, retention's delete, an app's
/// deletion.
@Suite struct DeviceCountsTests {
    @Test func theKeptCountsEqualARecountAfterEveryKindOfChange() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let other = try await service.createApp()
            let counts = DeviceCountStore(client: service.postgres, logger: TestDatabase.logger)
            func recount(_ appID: Int64) async throws -> AppDeviceCounts {
                var counted = AppDeviceCounts()
                for provider in Provider.allCases {
                    let count =
                        try await service.integer(
                            """
                            SELECT count(*) FROM devices WHERE app_id = \(appID) AND provider = \(provider.rawValue)
                              AND invalidated_at IS NULL AND unregistered_at IS NULL AND merged_into IS NULL
                            """) ?? 0
                    if count > 0 { counted.reachable[provider] = count }
                }
                counted.invalidated =
                    try await service.integer(
                        """
                        SELECT count(*) FROM devices WHERE app_id = \(appID) AND invalidated_at IS NOT NULL
                          AND unregistered_at IS NULL AND merged_into IS NULL
                        """) ?? 0
                return counted
            }
            func expectExact(_ step: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                for id in [app.app.id, other.app.id] {
                    let recounted = try await recount(id)
                    #expect(try await counts.counts(appID: id) == recounted, "app \(id) after \(step)", sourceLocation: sourceLocation)
                    _ = try await counts.fold()
                    #expect(try await counts.counts(appID: id) == recounted, "app \(id) after \(step), folded", sourceLocation: sourceLocation)
                }
            }

            var devices: [Int64] = []
            for index in 0..<6 {
                devices.append(try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xD00 + index), alias: "u\(index % 2)"))
            }
            let android = try await client.signed(
                .post, "/api/v1/device_tokens", body: #"{"device_token": {"provider": "fcm", "token": "fcm-token-counted-1"}}"#, as: app.deviceCredential)
            #expect(android.status == .ok)
            let browser = WebPushKeys(p256dh: Base64URL.encode(P256.KeyAgreement.PrivateKey().publicKey.x963Representation), auth: "AAECAwQFBgcICQoLDA0ODw")
            let web = try await client.signed(
                .post, "/api/v1/device_tokens",
                body:
                    #"{"provider": "webpush", "token": "https://fcm.googleapis.com/fcm/send/counted", "keys": {"p256dh": "\#(browser.p256dh)", "auth": "\#(browser.auth)"}}"#,
                as: app.deviceCredential)
            #expect(web.status == .ok, "\(String(buffer: web.body))")
            _ = try await Pipeline.register(client, other.deviceCredential, token: Pipeline.token(0xD00), alias: "elsewhere")
            try await expectExact("registrations")
            #expect(try await counts.counts(appID: app.app.id) == AppDeviceCounts(reachable: [.apns: 6, .fcm: 1, .webpush: 1]))

            // Registering again, as the SDK does on every launch, changes no count and appends nothing.
            let changes = try await service.integer("SELECT count(*) FROM device_count_changes") ?? -1
            _ = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xD00), alias: "u0")
            #expect(try await service.integer("SELECT count(*) FROM device_count_changes") == changes)

            try await service.sql("UPDATE devices SET invalidated_at = now(), invalidation_reason = 'Unregistered' WHERE id = \(devices[1])")
            try await expectExact("an invalidation")
            #expect(try await counts.counts(appID: app.app.id).invalidated == 1)

            // Registering the invalidated token again makes it reachable.
            _ = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xD01), alias: "u1")
            try await expectExact("registering an invalidated token again")

            #expect(try await client.signed(.delete, "/api/v1/device_tokens/\(devices[2])", as: app.deviceCredential).status.code < 300)
            try await expectExact("an unregistration")

            // Changing a token to one another row holds merges the two: one row survives.
            let merged = try await client.signed(
                .patch, "/api/v1/device_tokens/\(devices[3])", body: #"{"token": "\#(Pipeline.token(0xD04))"}"#, as: app.deviceCredential)
            #expect(merged.status == .ok, "\(String(buffer: merged.body))")
            try await expectExact("a merge")

            try await service.sql("DELETE FROM devices WHERE id = \(devices[2])")
            try await expectExact("a delete")

            // An import: tokens new to the app, one it has already, an invalidated one registered again,
            // and one switching provider, in one `INSERT … ON CONFLICT`.
            try await service.sql("UPDATE devices SET invalidated_at = now() WHERE id = \(devices[5])")
            func row(_ provider: Provider, _ token: String) -> DeviceFields {
                var fields = DeviceFields()
                fields.provider = provider
                fields.token = token
                return fields
            }
            _ = try await DeviceImportStore(client: service.postgres, logger: TestDatabase.logger).write(
                appID: app.app.id,
                devices: [
                    row(.apns, Pipeline.token(0xD10)), row(.fcm, "fcm-imported-1"), row(.apns, Pipeline.token(0xD00)),
                    row(.apns, Pipeline.token(0xD05)), row(.apns, "fcm-token-counted-1"),
                ]
            ) { _, _ in }
            try await expectExact("an import")

            // Devices new in the last day, from the hours they were added in.
            #expect(
                try await counts.newDevices(appIDs: [app.app.id, other.app.id], since: Date().addingTimeInterval(-3600))[app.app.id] == 10,
                "eight registered, two imported")
            #expect(try await counts.newDevices(appIDs: [app.app.id, other.app.id], since: Date().addingTimeInterval(-3600))[other.app.id] == 1)

            // An app's deletion takes its counts with it; the other app's stay.
            try await service.sql("DELETE FROM apps WHERE id = \(app.app.id)")
            _ = try await counts.fold()
            #expect(try await counts.counts(appIDs: [app.app.id]).isEmpty)
            #expect(try await service.integer("SELECT count(*) FROM device_count_changes") == 0, "changes of a deleted app are dropped")
            #expect(try await counts.counts(appID: other.app.id) == AppDeviceCounts(reachable: [.apns: 1]))
        }
    }
}
