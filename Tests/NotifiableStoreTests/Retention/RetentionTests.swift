import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// Retention (Migrations/0017, `RetentionStore`): days of deliveries go as whole partitions, the
/// rest in batches, and nothing a live feature still promises goes. The clock is moved by dating
/// notifications back before their fan-out, so their deliveries land in the partitions of those
/// days, as months of real use would leave them.
@Suite struct RetentionTests {
    @Test func oldDaysAreDroppedWholeAndWhatIsStillPromisedStays() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let created = try await service.createApp()
            let app = created.app.id
            try await service.insertDevices(appID: app, count: 4, tokenSeed: 0x2E7)
            let old = try await Self.sendDated(client, service, created, daysAgo: 40)
            let retrying = try await Self.sendDated(client, service, created, daysAgo: 38)
            let stateful = try await Self.sendDated(client, service, created, daysAgo: 36)
            let recent = try await Self.sendDated(client, service, created, daysAgo: 0)
            try await Pipeline.fanOut(service)
            // Scheduled long ago for a time still to come: its fan-out has not begun.
            let sendAt = ISO8601DateFormatter().string(from: Date().addingTimeInterval(20 * 86_400))
            let scheduled = try await Pipeline.send(
                client, created.serverCredential, #"{"message": "later", "all": true, "send_at": "\#(sendAt)"}"#)
            try await service.sql("UPDATE notifications SET created_at = now() - interval '40 days' WHERE id = \(scheduled)")

            try await service.sql("UPDATE deliveries SET state = 'sent', sent_at = now() WHERE notification_id IN (\(old), \(stateful), \(recent))")
            // Still backing off: a retry the queue promises to make.
            try await service.sql(
                "UPDATE deliveries SET state = 'retrying', run_at = now() + interval '1 hour' WHERE notification_id = \(retrying)")
            // A user's copy of a stateful notification, not yet expired.
            try await service.sql(
                """
                INSERT INTO user_notifications (app_id, notification_id, user_alias, expires_at)
                VALUES (\(app), \(stateful), 'alice', now() + interval '30 days')
                """)
            try await service.sql(
                """
                INSERT INTO sandbox_pushes (app_id, delivery_id, notification_id, device_id, provider, token, payload, created_at)
                SELECT \(app), id, notification_id, device_id, 'apns', 'ab', '{}',
                       CASE WHEN notification_id = \(old) THEN now() - interval '40 days' ELSE now() END
                FROM deliveries WHERE notification_id IN (\(old), \(recent))
                """)
            // Gone 40 days ago: one with nothing left, one whose retrying delivery is still queued.
            let devices = try await service.integers("SELECT id FROM devices WHERE app_id = \(app) ORDER BY id")
            try await service.sql("UPDATE devices SET unregistered_at = now() - interval '40 days' WHERE id IN (\(devices[0]), \(devices[1]))")
            try await service.sql("DELETE FROM deliveries WHERE device_id = \(devices[0]) OR (device_id = \(devices[1]) AND notification_id = \(recent))")
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)

            let oldDay = try await Self.partition(of: old, service)
            let statefulDay = try await Self.partition(of: stateful, service)
            let retryingDay = try await Self.partition(of: retrying, service)
            let retention = RetentionStore(client: service.postgres, logger: TestDatabase.logger, batchSize: 2)
            let report = try await retention.run(keepingDays: 30)

            // The legacy partition (deliveries from before partitioning) is empty here: it goes too.
            #expect(report.droppedPartitions == ["deliveries_legacy", oldDay, statefulDay], "\(report)")
            #expect(try await service.integer("SELECT count(*) FROM pg_class WHERE relname = \(oldDay)") == 0)
            #expect(try await Self.remaining([old, retrying, stateful, recent, scheduled], service) == [retrying, stateful, recent, scheduled])
            #expect(report.deletedNotifications == 1)
            #expect(try await service.integer("SELECT count(*) FROM notification_counters WHERE notification_id = \(old)") == 0)
            #expect(try await service.deliveries(of: retrying, in: "retrying") == 3)
            #expect(try await service.deliveries(of: recent, in: "sent") == 2)
            #expect(report.deletedSandboxPushes == 4)
            #expect(try await service.integer("SELECT count(*) FROM sandbox_pushes WHERE app_id = \(app)") == 4)
            #expect(report.purgedDevices == 1)
            #expect(try await service.integers("SELECT id FROM devices WHERE app_id = \(app) ORDER BY id") == Array(devices.dropFirst()))
            #expect(try await service.recountedCounters(of: recent) == service.keptCounters(of: recent))
            #expect(report.longestLock > .zero && report.longestLock < .seconds(5), "\(report.longestLock)")

            // A second pass finds nothing more.
            #expect(try await retention.run(keepingDays: 30) == RetentionReport())

            // Once the retries are over, their day and what waited for it go too.
            try await service.sql("UPDATE deliveries SET state = 'dead', dead_at = now() WHERE notification_id = \(retrying)")
            let later = try await retention.run(keepingDays: 30)
            #expect(later.droppedPartitions == [retryingDay])
            #expect(try await Self.remaining([retrying, stateful], service) == [stateful])
            #expect(later.purgedDevices == 1)
        }
    }

    /// What names a person outside deliveries goes by age too: history of devices that stay,
    /// webhook events a paused webhook never sent, Live Activity tokens not renewed.
    @Test func historyUnsentWebhookEventsAndStaleActivityTokensGoAfterThePeriod() async throws {
        try await withTestService(isolatedDatabase: true) { _, service in
            let app = try await service.createApp().app.id
            try await service.insertDevices(appID: app, count: 2, tokenSeed: 0x3A1)
            let devices = try await service.integers("SELECT id FROM devices WHERE app_id = \(app) ORDER BY id")
            try await service.sql("UPDATE devices SET user_alias = 'old-owner' WHERE id = \(devices[0])")
            try await service.sql("UPDATE devices SET user_alias = 'new-owner' WHERE id = \(devices[0])")
            try await service.sql("UPDATE device_events SET at = now() - interval '40 days' WHERE device_id = \(devices[0]) AND event = 'registered'")
            try await service.sql(
                """
                UPDATE device_events SET at = now() - interval '35 days'
                WHERE device_id = \(devices[0]) AND previous_alias IS NULL AND event = 'user_changed'
                """)
            let webhook = try await service.integer(
                """
                INSERT INTO webhooks (app_id, url, events, sealed_secret, state, paused_at)
                VALUES (\(app), 'https://example.com/h', '{sent}', '\\x00', 'paused', now()) RETURNING id
                """)
            try await service.sql(
                """
                INSERT INTO webhook_events (webhook_id, type, occurred_at, payload)
                VALUES (\(webhook!), 'sent', now() - interval '40 days', jsonb_build_object('device_id', \(devices[0]), 'user_alias', 'old-owner')),
                       (\(webhook!), 'sent', now(), jsonb_build_object('device_id', \(devices[1])))
                """)
            try await service.sql(
                """
                INSERT INTO live_activity_tokens (app_id, activity_id, device_id, token, updated_at)
                VALUES (\(app), 'old', \(devices[0]), 'aa', now() - interval '40 days'), (\(app), 'new', \(devices[1]), 'bb', now())
                """)
            try await service.sql(
                """
                INSERT INTO push_to_start_tokens (device_id, attributes_type, token, updated_at)
                VALUES (\(devices[0]), 'Old', 'cc', now() - interval '40 days'), (\(devices[1]), 'New', 'dd', now())
                """)

            let report = try await RetentionStore(client: service.postgres, logger: TestDatabase.logger, batchSize: 2).run(keepingDays: 30)
            #expect(report.deletedDeviceEvents == 2, "\(report)")
            #expect(report.deletedWebhookEvents == 1)
            #expect(report.deletedActivityTokens == 2)
            #expect(try await service.integer("SELECT count(*) FROM device_events WHERE previous_alias = 'old-owner'") == 1, "a recent change stays")
            #expect(try await service.integer("SELECT count(*) FROM device_events WHERE device_id = \(devices[1])") == 1)
            #expect(try await service.integer("SELECT count(*) FROM webhook_events WHERE payload ? 'user_alias'") == 0)
            #expect(try await service.text("SELECT string_agg(token, ',' ORDER BY token) FROM live_activity_tokens WHERE app_id = \(app)") == "bb")
            #expect(try await service.text("SELECT string_agg(token, ',' ORDER BY token) FROM push_to_start_tokens") == "dd")
            #expect(try await service.integers("SELECT id FROM devices WHERE app_id = \(app) ORDER BY id") == devices, "devices that stay, stay")
        }
    }

    /// An app may keep fewer days than the service. Its settled deliveries past its own period go
    /// row by row, and with them its notifications, sandbox pushes and gone devices; what it still
    /// promises stays (a retry, a live stateful copy, whose counters keep their history), and
    /// another app's data of the same days stays whole.
    @Test func anAppKeepingFewerDaysLosesOnlyItsOwnOldData() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let short = try await service.createApp(name: "Short"), other = try await service.createApp(name: "Other")
            #expect(try await service.apps.update(id: short.app.id, AppStore.Changes(retentionDays: 7))?.retentionDays == 7)
            try await service.insertDevices(appID: short.app.id, count: 3, tokenSeed: 0x2EA)
            try await service.insertDevices(appID: other.app.id, count: 3, tokenSeed: 0x2EB)
            let old = try await Self.sendDated(client, service, short, daysAgo: 10)
            let stateful = try await Self.sendDated(client, service, short, daysAgo: 10)
            let retrying = try await Self.sendDated(client, service, short, daysAgo: 10)
            let recent = try await Self.sendDated(client, service, short, daysAgo: 3)
            let othersOld = try await Self.sendDated(client, service, other, daysAgo: 10)
            try await Pipeline.fanOut(service)
            try await service.sql("UPDATE deliveries SET state = 'sent', sent_at = now()")
            try await service.sql(
                """
                UPDATE deliveries SET state = 'retrying', run_at = now() + interval '1 hour'
                WHERE id = (SELECT min(id) FROM deliveries WHERE notification_id = \(retrying))
                """)
            try await service.sql(
                """
                INSERT INTO user_notifications (app_id, notification_id, user_alias, expires_at)
                VALUES (\(short.app.id), \(stateful), 'alice', now() + interval '30 days')
                """)
            // Each app's sandbox: a push 10 days old and one of today.
            try await service.sql(
                """
                INSERT INTO sandbox_pushes (app_id, delivery_id, notification_id, device_id, provider, token, payload, created_at)
                SELECT app_id, id, notification_id, device_id, 'apns', 'ab', '{}',
                       CASE WHEN notification_id IN (\(old), \(othersOld)) THEN now() - interval '10 days' ELSE now() END
                FROM (SELECT DISTINCT ON (notification_id) * FROM deliveries
                      WHERE notification_id IN (\(old), \(recent), \(othersOld)) ORDER BY notification_id, id) AS first
                """)
            // A device of each app unregistered 10 days ago, with no delivery left.
            try await service.insertDevices(appID: short.app.id, count: 1, tokenSeed: 0x2EC)
            try await service.insertDevices(appID: other.app.id, count: 1, tokenSeed: 0x2ED)
            try await service.sql(
                "UPDATE devices SET unregistered_at = now() - interval '10 days' WHERE id NOT IN (SELECT device_id FROM deliveries)")
            let statefulCounters = try await service.keptCounters(of: stateful)
            #expect(statefulCounters.sent == 3)

            let retention = RetentionStore(client: service.postgres, logger: TestDatabase.logger, batchSize: 2)
            let report = try await retention.run(keepingDays: 30)

            #expect(report.droppedPartitions.allSatisfy { $0 == "deliveries_legacy" }, "no day is past the service's period: \(report)")
            #expect(report.deletedDeliveries == 3 + 3 + 2, "\(report)")
            #expect(try await Self.remaining([old, stateful, retrying, recent, othersOld], service) == [stateful, retrying, recent, othersOld])
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id IN (\(old), \(stateful))") == 0)
            #expect(try await service.deliveries(of: retrying, in: "retrying") == 1)
            #expect(try await service.deliveries(of: retrying, in: "sent") == 0)
            #expect(try await service.keptCounters(of: stateful) == statefulCounters, "retention removes rows, not the counts of history")
            #expect(try await service.deliveries(of: recent, in: "sent") == 3)
            #expect(try await service.deliveries(of: othersOld, in: "sent") == 3)
            #expect(try await service.recountedCounters(of: othersOld) == service.keptCounters(of: othersOld))
            #expect(report.deletedNotifications == 1)
            #expect(report.deletedSandboxPushes == 1)
            #expect(try await service.integer("SELECT count(*) FROM sandbox_pushes WHERE app_id = \(short.app.id)") == 1)
            #expect(try await service.integer("SELECT count(*) FROM sandbox_pushes WHERE app_id = \(other.app.id)") == 1)
            #expect(report.purgedDevices == 1)
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(short.app.id)") == 3)
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(other.app.id)") == 4)

            #expect(try await retention.run(keepingDays: 30) == RetentionReport(), "a second pass finds nothing more")
            // The service's period, when shorter still, wins over the app's: once the retry is
            // over, the day goes whole, the other app's notification with it.
            try await service.sql("UPDATE deliveries SET state = 'dead', dead_at = now() WHERE notification_id = \(retrying)")
            let shorter = try await retention.run(keepingDays: 5)
            #expect(try await Self.remaining([stateful, retrying, othersOld], service) == [stateful], "\(shorter)")
        }
    }

    /// The queue's floor lets claims skip the days with nothing to send, and never rises past
    /// work: a notification fanned out long after it was created, or dead deliveries put back in
    /// the queue, bring it down to their day.
    @Test func theQueueFloorComesDownForLateWorkAndNeverRisesPastIt() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let created = try await service.createApp()
            try await service.insertDevices(appID: created.app.id, count: 3, tokenSeed: 0x2E8)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            let today = Date().deliveryDay
            #expect(try await queue.raiseFloor() == today - 1, "never past yesterday")

            let late = try await Self.sendDated(client, service, created, daysAgo: 10)
            try await Pipeline.fanOut(service)
            let lateDay = try #require(try await service.integer("SELECT DISTINCT day FROM deliveries WHERE notification_id = \(late)"))
            #expect(lateDay == Int64(today - 10))
            #expect(try await Self.floor(service) == lateDay)
            #expect(try await queue.raiseFloor() == Int32(lateDay), "deliveries wait on that day")
            let claimed = try await queue.claim(limit: 10, lease: .seconds(30))
            #expect(claimed.map(\.notificationID) == [late, late, late])
            #expect(claimed.allSatisfy { $0.id >> 32 == lateDay }, "a delivery's id carries its day")
            try await queue.record(claimed.map { DeliveryResult(deliveryID: $0.id, attempt: $0.attempt, state: .dead, reason: "gave up") })
            #expect(try await queue.raiseFloor() == today - 1)

            let requeued = try await QueueAdminStore(client: service.postgres, logger: TestDatabase.logger).requeueDead(appID: created.app.id, ids: nil)
            #expect(requeued == 3)
            #expect(try await Self.floor(service) == lateDay)
            #expect(try await queue.claim(limit: 10, lease: .seconds(30)).count == 3)
        }
    }

    /// A pass interrupted after detaching a day leaves it detached: the next pass drops it when
    /// nothing in it waits, and attaches it again, with the queue's floor brought down to it,
    /// when something does (work re-queued while it was being detached).
    @Test func aDayLeftDetachedIsDroppedOrAttachedAgainWithItsWork() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let created = try await service.createApp()
            try await service.insertDevices(appID: created.app.id, count: 2, tokenSeed: 0x2E9)
            let settled = try await Self.sendDated(client, service, created, daysAgo: 50)
            let waiting = try await Self.sendDated(client, service, created, daysAgo: 45)
            try await Pipeline.fanOut(service)
            try await service.sql("UPDATE deliveries SET state = 'sent', sent_at = now() WHERE notification_id = \(settled)")
            let settledDay = try await Self.partition(of: settled, service)
            let waitingDay = try await Self.partition(of: waiting, service)
            for name in [settledDay, waitingDay] {
                try await service.sql(PostgresQuery(unsafeSQL: "ALTER TABLE deliveries DETACH PARTITION \(name)"))
            }
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            #expect(try await queue.raiseFloor() == Date().deliveryDay - 1, "the detached day's work is out of the floor's sight")

            let report = try await RetentionStore(client: service.postgres, logger: TestDatabase.logger).run(keepingDays: 30)
            #expect(report.droppedPartitions.contains(settledDay) && !report.droppedPartitions.contains(waitingDay), "\(report)")
            let partitions = try await DeliveryPartitions.list(on: service.postgres, logger: TestDatabase.logger).map(\.name)
            #expect(partitions.contains(waitingDay) && !partitions.contains(settledDay), "\(partitions)")
            #expect(try await Self.floor(service) == Int64(try #require(DeliveryPartitions.day(ofPartitionNamed: waitingDay))))
            #expect(try await queue.claim(limit: 10, lease: .seconds(30)).map(\.notificationID) == [waiting, waiting])
        }
    }

    /// One partition per day, made ahead of time; a day's name says which day it holds.
    @Test func partitionsAreMadeAheadAndNamedForTheirDay() async throws {
        try await withTestService(isolatedDatabase: true) { _, service in
            let today = Date().deliveryDay
            // The migration made these days already: removed, they must be made again.
            for day in today...(today + Int32(DeliveryPartitions.daysAhead)) {
                let name = DeliveryPartitions.name(ofDay: day)
                try await service.sql(PostgresQuery(unsafeSQL: "ALTER TABLE deliveries DETACH PARTITION \(name)"))
                try await service.sql(PostgresQuery(unsafeSQL: "DROP TABLE \(name)"))
            }
            try await DeliveryPartitions.createAhead(on: service.postgres, logger: TestDatabase.logger)
            let partitions = try await DeliveryPartitions.list(on: service.postgres, logger: TestDatabase.logger)
            for day in today...(today + Int32(DeliveryPartitions.daysAhead)) {
                let name = DeliveryPartitions.name(ofDay: day)
                #expect(partitions.contains(DeliveryPartition(name: name, firstDay: day, endDay: day + 1)), "\(name) in \(partitions)")
            }
            #expect(partitions.first?.isLegacy == true)
            // Making one again changes nothing.
            try await DeliveryPartitions.createAhead(on: service.postgres, logger: TestDatabase.logger)
            #expect(try await DeliveryPartitions.list(on: service.postgres, logger: TestDatabase.logger) == partitions)
        }
    }

    // MARK: - Helpers

    /// A notification to the whole app, dated `daysAgo` days back before any fan-out.
    static func sendDated(
        _ client: some TestClientProtocol, _ service: TestService, _ app: AppStore.CreatedApp, daysAgo: Int
    ) async throws -> Int64 {
        let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "hello", "all": true}"#)
        try await service.sql("UPDATE notifications SET created_at = now() - make_interval(days => \(Int32(daysAgo))) WHERE id = \(id)")
        return id
    }

    static func partition(of notification: Int64, _ service: TestService) async throws -> String {
        let day = try #require(try await service.integer("SELECT delivery_day(created_at) FROM notifications WHERE id = \(notification)"))
        return DeliveryPartitions.name(ofDay: Int32(day))
    }

    static func remaining(_ notifications: [Int64], _ service: TestService) async throws -> [Int64] {
        try await service.integers("SELECT id FROM notifications WHERE id = ANY(\(notifications)) ORDER BY id")
    }

    static func floor(_ service: TestService) async throws -> Int64? {
        try await service.integer("SELECT day FROM delivery_queue_floor")
    }
}
