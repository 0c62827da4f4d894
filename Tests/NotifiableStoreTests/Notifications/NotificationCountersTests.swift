import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// A notification's counters are kept by the deliveries table's triggers and folded by the
/// queue's maintenance; read at any moment, before or after a fold, they equal a recount of the
/// deliveries.
@Suite struct NotificationCountersTests {
    @Test func theKeptCountersEqualARecountAfterEveryKindOfChange() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            var devices: [Int64] = []
            for index in 0..<5 { devices.append(try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xC00 + index))) }
            let ids = devices.map(String.init).joined(separator: ", ")
            let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "counted", "device_ids": [\#(ids)]}"#)
            let counterStore = NotificationCounterStore(client: service.postgres, logger: TestDatabase.logger)
            let notifications = NotificationStore(client: service.postgres, logger: TestDatabase.logger)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            func changeRows() async throws -> Int64 {
                try await service.integer("SELECT count(*) FROM notification_counter_changes WHERE notification_id = \(id)") ?? 0
            }
            func expectExact(_ step: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                let kept = try await service.keptCounters(of: id)
                #expect(kept == (try await service.recountedCounters(of: id)), "after \(step)", sourceLocation: sourceLocation)
            }

            try await Pipeline.fanOut(service)
            try await expectExact("the fan-out")
            #expect(try await service.keptCounters(of: id).pending == 5)

            // A claim from available moves no delivery between counters: it appends nothing.
            let before = try await changeRows()
            let claimed = try await queue.claim(limit: 5, lease: .seconds(30))
            #expect(claimed.count == 5)
            #expect(try await changeRows() == before)
            try await expectExact("the claim")

            let now = Date()
            let byDevice = Dictionary(uniqueKeysWithValues: claimed.map { ($0.deviceID, $0) })
            func result(_ index: Int, _ decision: DeliveryDecision) throws -> DeliveryResult {
                DeliveryResult(decision, for: try #require(byDevice[devices[index]]), sentAt: now)
            }
            _ = try await queue.record([
                try result(0, .sent(gatewayID: nil)),
                try result(1, .retry(at: now.addingTimeInterval(3600), reason: "ServiceUnavailable")),
                try result(2, .failed(reason: "BadTopic")),
                try result(3, .dead(reason: "attempts exhausted")),
                try result(4, .sent(gatewayID: nil)),
            ])
            try await expectExact("recording a batch")
            let recorded = try await service.keptCounters(of: id)
            #expect([recorded.sent, recorded.retrying, recorded.failed, recorded.dead, recorded.pending] == [2, 1, 1, 1, 0])
            #expect(try await counterStore.counters(notificationIDs: [id])[id]?.lastError != nil)

            // Status events: opened implies delivered, and a repeat changes nothing.
            for event in [DeliveryEvent.delivered, .opened, .opened] {
                _ = try await notifications.record(event, notificationID: id, deviceID: devices[0], appID: app.app.id, userAlias: nil)
            }
            _ = try await notifications.record(.opened, notificationID: id, deviceID: devices[4], appID: app.app.id, userAlias: nil)
            try await expectExact("status events")
            let reported = try await service.keptCounters(of: id)
            #expect(reported.delivered == 2 && reported.opened == 2)

            // Folding moves the changes into the totals; the counters read the same.
            #expect(try await counterStore.fold() > 0)
            #expect(try await changeRows() == 0)
            try await expectExact("the fold")

            // Cancelling settles the waiting (retrying) delivery; deleting a delivery takes it away.
            #expect(try await notifications.cancel(id: id, appID: app.app.id))
            try await expectExact("cancelling")
            #expect(try await service.keptCounters(of: id).cancelled == 1)
            _ = try await service.postgres.query(
                "DELETE FROM deliveries WHERE notification_id = \(id) AND device_id = \(devices[2])", logger: TestDatabase.logger
            )
            try await expectExact("a deletion")
            #expect(try await service.keptCounters(of: id).targeted == 4)
        }
    }

    @Test func aRolledBackStatementAndADeletedNotificationLeaveNothingCounted() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let (_, id) = try await Pipeline.queuedPush(client, service, app, token: Pipeline.token(0xC10), message: "gone")
            let counterStore = NotificationCounterStore(client: service.postgres, logger: TestDatabase.logger)
            _ = try await counterStore.fold()

            // A transaction that changes states and then fails leaves the counters as they were.
            await #expect(throws: (any Error).self) {
                try await service.postgres.withTransaction(logger: TestDatabase.logger) { connection in
                    _ = try await connection.query("UPDATE deliveries SET state = 'sent' WHERE notification_id = \(id)", logger: TestDatabase.logger)
                    _ = try await connection.query("SELECT 1 / 0", logger: TestDatabase.logger)
                }
            }
            #expect(try await service.keptCounters(of: id) == (try await service.recountedCounters(of: id)))
            #expect(try await service.keptCounters(of: id).pending == 1)

            // The notification's deletion cascades to its deliveries, whose changes the fold drops.
            _ = try await service.postgres.query("DELETE FROM notifications WHERE id = \(id)", logger: TestDatabase.logger)
            #expect(try await service.integer("SELECT count(*) FROM notification_counter_changes WHERE notification_id = \(id)") == 1)
            #expect(try await counterStore.fold() == 1)
            #expect(try await service.integer("SELECT count(*) FROM notification_counter_changes") == 0)
            #expect(try await service.integer("SELECT count(*) FROM notification_counters WHERE notification_id = \(id)") == 0)
        }
    }
}
