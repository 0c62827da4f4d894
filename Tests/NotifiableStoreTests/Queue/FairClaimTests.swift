import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// How a claim shares its batch: among the apps with ready deliveries, `high` before `normal`
/// within an app (claim_deliveries, Queue/SQL/claim_deliveries.sql). Driven by hand, over a database of its own.
@Suite struct FairClaimTests {
    /// One app's broadcast must not hold another app's push: every app with ready deliveries
    /// gets its share of the next claim, and what the small ones leave goes to the broadcast, so
    /// batches stay whole.
    @Test func aClaimSharesItsBatchAmongTheAppsWithReadyDeliveriesAndStaysWhole() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let broadcaster = try await service.createApp()
            let small = try await service.createApp()
            let single = try await service.createApp()
            try await service.insertDevices(appID: broadcaster.app.id, count: 300, tokenSeed: 0xFA1)
            try await service.insertDevices(appID: small.app.id, count: 2, tokenSeed: 0xFA2)
            try await service.insertDevices(appID: single.app.id, count: 1, tokenSeed: 0xFA3)
            let broadcast = try await Pipeline.send(client, broadcaster.serverCredential, #"{"message": "to all", "all": true}"#)
            let few = try await Pipeline.send(client, small.serverCredential, #"{"message": "to two", "all": true}"#)
            let one = try await Pipeline.send(client, single.serverCredential, #"{"message": "to one", "all": true}"#)
            try await Pipeline.fanOut(service)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)

            let first = try await queue.claim(limit: 100, lease: .seconds(30))
            #expect(first.count == 100)
            #expect(first.filter { $0.notificationID == few }.count == 2)
            #expect(first.filter { $0.notificationID == one }.count == 1)
            #expect(first.filter { $0.notificationID == broadcast }.count == 97)

            let second = try await queue.claim(limit: 100, lease: .seconds(30))
            #expect(second.count == 100 && second.allSatisfy { $0.notificationID == broadcast })
            #expect(Set((first + second).map(\.id)).count == 200, "a delivery was claimed twice")
        }
    }

    /// Two apps both with plenty: each gets half the batch.
    @Test func appsWithPlentyShareTheBatchEqually() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let apps = [try await service.createApp(), try await service.createApp()]
            var notifications: [Int64] = []
            for (index, app) in apps.enumerated() {
                try await service.insertDevices(appID: app.app.id, count: 200, tokenSeed: 0xFB0 + Int64(index))
                notifications.append(try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "all": true}"#))
            }
            try await Pipeline.fanOut(service)
            let claimed = try await DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger).claim(limit: 101, lease: .seconds(30))
            #expect(claimed.count == 101)
            let shares = notifications.map { id in claimed.filter { $0.notificationID == id }.count }.sorted()
            #expect(shares == [50, 51], "\(shares)")
        }
    }

    /// Within an app, a `high` notification goes before the `normal` bulk queued ahead of it, save
    /// a tenth of the app's share kept for `normal`, so that neither waits for the other.
    @Test func withinAnAppHighPriorityGoesBeforeOlderNormalBulkAndNormalKeepsATenth() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            try await service.insertDevices(appID: app.app.id, count: 50, tokenSeed: 0xFC1)
            let bulk = try await Pipeline.send(client, app.serverCredential, #"{"message": "bulk", "priority": "normal", "all": true}"#)
            try await Pipeline.fanOut(service)
            let urgent = try await Pipeline.send(client, app.serverCredential, #"{"message": "now", "all": true}"#)
            try await Pipeline.fanOut(service)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(bulk) AND priority = 5") == 50)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(urgent) AND priority = 10") == 50)

            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            let first = try await queue.claim(limit: 40, lease: .seconds(30))
            #expect(first.filter { $0.notificationID == urgent }.count == 36)
            #expect(first.filter { $0.notificationID == bulk }.count == 4)
            // What high leaves of the batch goes to normal.
            let second = try await queue.claim(limit: 40, lease: .seconds(30))
            #expect(Set(second.map(\.id)).count == 40 && Set(second.map(\.id)).isDisjoint(with: first.map(\.id)))
            #expect(second.filter { $0.notificationID == urgent }.count == 14)
            #expect(second.filter { $0.notificationID == bulk }.count == 26)
        }
    }

    /// More apps than the batch has room for: each claim takes one from as many apps as it can,
    /// and the next claim goes on to the next apps.
    @Test func moreAppsThanTheBatchHoldsAreServedOneEachAcrossClaims() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            var notifications: [Int64] = []
            for index in 0..<6 {
                let app = try await service.createApp()
                try await service.insertDevices(appID: app.app.id, count: 3, tokenSeed: 0xFD0 + Int64(index))
                notifications.append(try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "all": true}"#))
            }
            try await Pipeline.fanOut(service)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            var claimed: [ClaimedDelivery] = []
            for _ in 0..<3 {
                let batch = try await queue.claim(limit: 2, lease: .seconds(30))
                #expect(batch.count == 2 && Set(batch.map(\.appID)).count == 2, "\(batch.map(\.appID))")
                claimed += batch
            }
            // Each claim starts where the last left off: three batches of two reach all six apps.
            let perNotification = notifications.map { id in claimed.filter { $0.notificationID == id }.count }
            #expect(perNotification == [1, 1, 1, 1, 1, 1], "\(perNotification)")
            // Past the last app it wraps round to the first ones.
            let wrapped = try await queue.claim(limit: 2, lease: .seconds(30))
            #expect(Set(wrapped.map(\.appID)) == Set(claimed.prefix(2).map(\.appID)))
        }
    }

    /// Apps whose waiting deliveries are all backing off until later take no place in a claim,
    /// however many of them there are: the app with deliveries ready gets the whole batch.
    @Test func appsWithNothingReadyTakeNoPlaceInTheClaim() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            for index in 0..<5 {
                let app = try await service.createApp()
                try await service.insertDevices(appID: app.app.id, count: 2, tokenSeed: 0xF00 + Int64(index))
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "later", "all": true}"#)
                try await Pipeline.fanOut(service)
                try await service.postgres.query(
                    "UPDATE deliveries SET state = 'retrying', run_at = now() + interval '1 hour' WHERE notification_id = \(id)",
                    logger: TestDatabase.logger
                )
            }
            let ready = try await service.createApp()
            try await service.insertDevices(appID: ready.app.id, count: 10, tokenSeed: 0xF0F)
            let now = try await Pipeline.send(client, ready.serverCredential, #"{"message": "now", "all": true}"#)
            try await Pipeline.fanOut(service)
            let claimed = try await DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger).claim(limit: 3, lease: .seconds(30))
            #expect(claimed.count == 3 && claimed.allSatisfy { $0.notificationID == now })
        }
    }

    /// When every app fits in the batch, the one-more of uneven shares goes round the apps rather
    /// than always to the same one.
    @Test func unevenSharesGoRoundTheApps() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            var apps: [Int64] = []
            for index in 0..<3 {
                let app = try await service.createApp()
                try await service.insertDevices(appID: app.app.id, count: 20, tokenSeed: 0xF10 + Int64(index))
                _ = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "all": true}"#)
                apps.append(app.app.id)
            }
            try await Pipeline.fanOut(service)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            var claimed: [ClaimedDelivery] = []
            for _ in 0..<3 {
                let batch = try await queue.claim(limit: 4, lease: .seconds(30))
                #expect(batch.count == 4)
                claimed += batch
            }
            #expect(apps.map { app in claimed.filter { $0.appID == app }.count } == [4, 4, 4])
        }
    }

    /// Deliveries backing off until later are not ready; an app's ready ones are claimed past them.
    @Test func deliveriesWaitingForALaterRunTimeAreLeftAndReadyOnesTaken() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            try await service.insertDevices(appID: app.app.id, count: 40, tokenSeed: 0xFE1)
            let backingOff = try await Pipeline.send(client, app.serverCredential, #"{"message": "later", "all": true}"#)
            try await Pipeline.fanOut(service)
            try await service.postgres.query(
                "UPDATE deliveries SET state = 'retrying', run_at = now() + interval '1 hour' WHERE notification_id = \(backingOff)",
                logger: TestDatabase.logger
            )
            let ready = try await Pipeline.send(client, app.serverCredential, #"{"message": "now", "all": true}"#)
            try await Pipeline.fanOut(service)
            let claimed = try await DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger).claim(limit: 100, lease: .seconds(30))
            #expect(claimed.count == 40 && claimed.allSatisfy { $0.notificationID == ready })
        }
    }
}
