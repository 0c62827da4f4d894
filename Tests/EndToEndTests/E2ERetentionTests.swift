import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// Retention as a running service does it: its upkeep makes the coming days' partitions, and its
/// worker removes a day once everything in it is sent and the day is past the period.
@Suite struct E2ERetentionTests {
    @Test func aRunningServiceMakesTheComingDaysAndRemovesWhatIsPastRetention() async throws {
        try await withTestService(workers: true, configure: { $0.upkeepInterval = .milliseconds(300) }) { client, service in
            let created = try await service.apps.create(name: "Retention", deliveryMode: .sandbox)
            try await service.insertDevices(appID: created.app.id, count: 3, tokenSeed: 0x2EA)

            // A coming day removed by hand is made again by the next round.
            let ahead = DeliveryPartitions.name(ofDay: Date().deliveryDay + Int32(DeliveryPartitions.daysAhead))
            try await service.sql(PostgresQuery(unsafeSQL: "ALTER TABLE deliveries DETACH PARTITION \(ahead)"))
            // IF EXISTS: the worker's retention pass, every 300 ms here, may drop the detached day
            // first, as it drops any day a pass left detached.
            try await service.sql(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS \(ahead)"))
            #expect(
                try await service.eventually {
                    try await DeliveryPartitions.list(on: service.postgres, logger: TestDatabase.logger).contains { $0.name == ahead }
                })

            // A notification of 40 days ago: scheduled, so that no worker fans it out before it is
            // dated back, then due at once on that day.
            let sendAt = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3600))
            let old = try await Pipeline.send(
                client, created.serverCredential, #"{"message": "old", "all": true, "send_at": "\#(sendAt)"}"#)
            try await service.sql(
                "UPDATE notifications SET created_at = now() - interval '40 days', send_at = now() - interval '40 days' WHERE id = \(old)")
            let recent = try await Pipeline.send(client, created.serverCredential, #"{"message": "new", "all": true}"#)
            #expect(try await Pipeline.settled(service, recent))

            // Sent in its own day's partition, then that day goes, and the notification with it.
            let removed = try await service.eventually {
                try await service.integer("SELECT count(*) FROM notifications WHERE id = \(old)") == 0
            }
            let left = removed ? "" : try await service.describeDeliveries(of: old)
            #expect(removed, "\(left)")
            #expect(try await service.deliveries(of: recent, in: "sent") == 3)
            let oldDay = DeliveryPartitions.name(ofDay: Date().addingTimeInterval(-40 * 86_400).deliveryDay)
            #expect(try await !DeliveryPartitions.list(on: service.postgres, logger: TestDatabase.logger).contains { $0.name == oldDay })
        }
    }
}
