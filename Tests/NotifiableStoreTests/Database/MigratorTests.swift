import Foundation
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

@Suite struct MigratorTests {
    static func migrate(databaseURL: String) async throws -> (status: Int32, output: String) {
        try await NotifiableProcess.run(
            ["migrate", "--directory", TestDatabase.migrationsDirectory.path], environment: ["DATABASE_URL": databaseURL]
        )
    }

    static func appliedVersions(_ client: Database) async throws -> [String] {
        var versions: [String] = []
        let rows = try await client.query("SELECT version FROM schema_migrations ORDER BY version", logger: TestDatabase.logger)
        for try await version in rows.decode(String.self) { versions.append(version) }
        return versions
    }

    @Test func twoProcessesMigratingAtOnceBothSucceedAndEachMigrationIsAppliedOnce() async throws {
        let expected = try Migrator.load(from: TestDatabase.migrationsDirectory).map(\.version)
        try await TestDatabase.withFreshDatabase { url in
            async let first = Self.migrate(databaseURL: url)
            async let second = Self.migrate(databaseURL: url)
            let (one, other) = try await (first, second)
            #expect(one.status == 0, "\(one.output)")
            #expect(other.status == 0, "\(other.output)")
            let versions = try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { client in
                try await Self.appliedVersions(client)
            }
            #expect(versions == expected)
        }
    }

    @Test func aFailingMigrationIsRolledBackAndNamedWhileEarlierOnesStay() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("migrations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "CREATE TABLE first_table (id int);".write(to: folder.appendingPathComponent("0001_first.sql"), atomically: true, encoding: .utf8)
        try """
        CREATE TABLE half_made (id int);
        INSERT INTO no_such_table VALUES (1);
        """.write(to: folder.appendingPathComponent("0002_broken.sql"), atomically: true, encoding: .utf8)

        try await TestDatabase.withFreshDatabase { url in
            try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { client in
                let migrator = Migrator(client: client, logger: TestDatabase.logger)
                do {
                    try await migrator.migrate(try Migrator.load(from: folder), functions: [])
                    Issue.record("the broken migration was applied")
                } catch {
                    let message = String(describing: error)
                    #expect(message.contains("0002_broken.sql"))
                    #expect(message.contains("no_such_table"))
                }
                #expect(try await Self.appliedVersions(client) == ["0001"])
                let halfMade = try await client.query(
                    "SELECT count(*)::int8 FROM pg_tables WHERE tablename = 'half_made'", logger: TestDatabase.logger
                )
                for try await count in halfMade.decode(Int64.self) { #expect(count == 0) }

                // Running again applies nothing twice and still refuses the broken file.
                await #expect(throws: MigrationError.self) { try await migrator.migrate(try Migrator.load(from: folder), functions: []) }
                #expect(try await Self.appliedVersions(client) == ["0001"])
            }
        }
    }

    @Test func aMigrationChangedAfterItWasAppliedIsRefused() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("migrations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("0001_table.sql")
        try "CREATE TABLE t (id int);".write(to: file, atomically: true, encoding: .utf8)

        try await TestDatabase.withFreshDatabase { url in
            try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { client in
                let migrator = Migrator(client: client, logger: TestDatabase.logger)
                let applied = try await migrator.migrate(try Migrator.load(from: folder), functions: [])
                #expect(applied.map(\.version) == ["0001"])
                #expect(try await migrator.migrate(try Migrator.load(from: folder), functions: []).isEmpty)

                try "CREATE TABLE t (id bigint);".write(to: file, atomically: true, encoding: .utf8)
                await #expect(throws: MigrationError.self) { try await migrator.migrate(try Migrator.load(from: folder), functions: []) }
            }
        }
    }
}

/// Stored function files are applied after the migrations when their text changed since they were
/// last applied, all in one transaction: a failing one leaves every function as it was, named.
@Suite struct StoredFunctionFileTests {
    @Test func aChangedFileIsAppliedAgainAndAFailingOneChangesNothing() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("migrations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "CREATE TABLE counted (id int);".write(to: folder.appendingPathComponent("0001_counted.sql"), atomically: true, encoding: .utf8)
        let counted = StoredFunctionFile(
            fileName: "counted_rows.sql", sql: "CREATE OR REPLACE FUNCTION counted_rows() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM counted $$;")

        try await TestDatabase.withFreshDatabase { url in
            try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { client in
                let migrator = Migrator(client: client, logger: TestDatabase.logger)
                let migrations = try Migrator.load(from: folder)
                try await migrator.migrate(migrations, functions: [Self.answer(1), counted])
                #expect(try await Self.integer("SELECT (answer() + counted_rows())::int8", client) == 1)
                let appliedAt = try await Self.integer(
                    "SELECT extract(epoch FROM applied_at)::int8 * 1000000 + extract(microseconds FROM applied_at)::int8 FROM schema_functions WHERE file_name = 'counted_rows.sql'",
                    client)

                try await migrator.migrate(migrations, functions: [Self.answer(2), counted])
                #expect(try await Self.integer("SELECT answer()::int8", client) == 2)
                // The unchanged file was left alone.
                #expect(
                    try await Self.integer(
                        "SELECT extract(epoch FROM applied_at)::int8 * 1000000 + extract(microseconds FROM applied_at)::int8 FROM schema_functions WHERE file_name = 'counted_rows.sql'",
                        client) == appliedAt)

                let broken = StoredFunctionFile(
                    fileName: "broken.sql", sql: "CREATE OR REPLACE FUNCTION broken() RETURNS int LANGUAGE sql AS $$ SELECT * FROM no_such_table $$;")
                do {
                    try await migrator.migrate(migrations, functions: [Self.answer(3), broken])
                    Issue.record("a broken stored function file was applied")
                } catch {
                    #expect(String(describing: error).contains("broken.sql"), "\(error)")
                    #expect(String(describing: error).contains("no_such_table"), "\(error)")
                }
                #expect(try await Self.integer("SELECT answer()::int8", client) == 2, "the whole transaction rolled back")
            }
        }
    }

    static func answer(_ value: Int) -> StoredFunctionFile {
        StoredFunctionFile(fileName: "answer.sql", sql: "CREATE OR REPLACE FUNCTION answer() RETURNS int LANGUAGE sql AS $$ SELECT \(value) $$;")
    }

    /// The service's own files are in its build, one per function, and none is empty.
    @Test func theServicesFilesAreBuiltIn() throws {
        let files = try StoredFunctionFile.bundled()
        #expect(files.contains { $0.fileName == "claim_deliveries.sql" })
        #expect(Set(files.map(\.fileName)).count == files.count)
        #expect(files.allSatisfy { !SQLScript.statements(in: $0.sql).isEmpty })
    }

    static func integer(_ query: PostgresQuery, _ client: Database) async throws -> Int64? {
        for try await value in try await client.query(query, logger: TestDatabase.logger).decode(Int64?.self) { return value }
        return nil
    }
}

/// Migration 0014 counts the deliveries a database already has: the kept counters start equal to
/// a recount, and stay so for the changes that follow.
@Suite struct CounterBackfillTests {
    @Test func countersAreBackfilledFromExistingDeliveries() async throws {
        let all = try Migrator.load(from: TestDatabase.migrationsDirectory)
        let before = all.filter { $0.version < "0014" }
        try await TestDatabase.withFreshDatabase { url in
            try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { client in
                do {
                    try await Self.backfill(client, before: before, all: all)
                } catch {
                    Issue.record("\(String(reflecting: error))")
                }
            }
        }
    }

    static func backfill(_ client: Database, before: [Migration], all: [Migration]) async throws {
        let migrator = Migrator(client: client, logger: TestDatabase.logger)
        _ = try await migrator.migrate(before, functions: [])
        // An app with three devices and two notifications, in several states.
        for statement: PostgresQuery in [
            "INSERT INTO apps (id, name) VALUES (1, 'Backfill')",
            "INSERT INTO devices (app_id, provider, token) SELECT 1, 'apns', lpad(to_hex(n), 64, '0') FROM generate_series(1, 3) AS n",
            "INSERT INTO notifications (id, app_id, content, targeting) VALUES (1, 1, '{}', '{}'), (2, 1, '{}', '{}')",
            """
            INSERT INTO deliveries (notification_id, app_id, device_id, state, delivered_at, opened_at)
            SELECT 1, 1, id, 'sent', now(), CASE WHEN id % 2 = 0 THEN now() END FROM devices
            """,
            "INSERT INTO deliveries (notification_id, app_id, device_id) SELECT 2, 1, id FROM devices",
            "UPDATE deliveries SET state = 'retrying', reason = 'ServiceUnavailable' WHERE notification_id = 2 AND device_id = (SELECT min(id) FROM devices)",
        ] {
            _ = try await client.query(statement, logger: TestDatabase.logger)
        }
        _ = try await migrator.migrate(all)

        let store = NotificationCounterStore(client: client, logger: TestDatabase.logger)
        let counters = try await store.counters(notificationIDs: [1, 2])
        #expect([counters[1]?.sent, counters[1]?.delivered, counters[1]?.opened, counters[1]?.targeted] == [3, 3, 1, 3])
        #expect([counters[2]?.pending, counters[2]?.retrying, counters[2]?.targeted] == [2, 1, 3])
        #expect(counters[2]?.lastError == "ServiceUnavailable")
        // The triggers count what follows, and a TRUNCATE empties the counts with the deliveries.
        _ = try await client.query("UPDATE deliveries SET state = 'sent' WHERE notification_id = 2", logger: TestDatabase.logger)
        #expect(try await store.counters(notificationIDs: [2])[2]?.sent == 3)
        _ = try await client.query("TRUNCATE deliveries CASCADE", logger: TestDatabase.logger)
        #expect(try await store.counters(notificationIDs: [1, 2]).values.allSatisfy { $0.targeted == 0 && $0.delivered == 0 })
    }
}

/// Migration 0017 turns a populated deliveries table into the partitioned layout: every row stays,
/// as the legacy partition, and the queue goes on where it was. The rows are there from before 0014,
/// which counts them: a database short of 0017 and past 0014 only existed with the counting
/// triggers of their time, which now are stored functions applied after the last migration.
@Suite struct PartitionMigrationTests {
    @Test func existingDeliveriesBecomeTheLegacyPartitionAndStayInTheQueue() async throws {
        let all = try Migrator.load(from: TestDatabase.migrationsDirectory)
        try await TestDatabase.withFreshDatabase { url in
            try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { client in
                let migrator = Migrator(client: client, logger: TestDatabase.logger)
                _ = try await migrator.migrate(all.filter { $0.version < "0014" }, functions: [])
                for statement: PostgresQuery in [
                    "INSERT INTO apps (id, name) VALUES (1, 'Legacy')",
                    "INSERT INTO devices (app_id, provider, token) SELECT 1, 'apns', lpad(to_hex(n), 64, '0') FROM generate_series(1, 4) AS n",
                    "INSERT INTO notifications (id, app_id, content, targeting, state) VALUES (1, 1, '{}', '{}', 'fanned_out'), (2, 1, '{}', '{}', 'fanned_out')",
                    "INSERT INTO deliveries (notification_id, app_id, device_id, state, sent_at) SELECT 1, 1, id, 'sent', now() FROM devices",
                    "INSERT INTO deliveries (notification_id, app_id, device_id) SELECT 2, 1, id FROM devices",
                ] {
                    _ = try await client.query(statement, logger: TestDatabase.logger)
                }
                _ = try await migrator.migrate(all)
                let counters = NotificationCounterStore(client: client, logger: TestDatabase.logger)

                let legacy = try await Self.integer("SELECT count(*) FROM deliveries_legacy", client)
                #expect(legacy == 8)
                #expect(try await Self.integer("SELECT count(*) FROM deliveries WHERE day = 0", client) == 8)
                let kept = try await counters.counters(notificationIDs: [1, 2])
                #expect([kept[1]?.sent, kept[1]?.targeted, kept[2]?.pending, kept[2]?.targeted] == [4, 4, 4, 4])
                // Work waits in the legacy partition, so the floor stays at its day.
                #expect(try await Self.integer("SELECT day FROM delivery_queue_floor", client) == 0)
                #expect(try await DeliveryQueueStore(client: client, logger: TestDatabase.logger).raiseFloor() == 0)
                // Still one push per device and notification.
                await #expect(throws: (any Error).self) {
                    try await client.query(
                        "INSERT INTO deliveries (id, day, notification_id, app_id, device_id) VALUES (7, 0, 2, 1, (SELECT min(id) FROM devices))",
                        logger: TestDatabase.logger)
                }
                let claimed = try await DeliveryQueueStore(client: client, logger: TestDatabase.logger).claim(limit: 10, lease: .seconds(30))
                #expect(claimed.map(\.notificationID) == [2, 2, 2, 2])
                // Its rows are recent and at work: retention keeps it.
                let report = try await RetentionStore(client: client, logger: TestDatabase.logger).run(keepingDays: 1)
                #expect(!report.droppedPartitions.contains("deliveries_legacy"))
                // New deliveries go to today's partition, their ids carrying the day.
                _ = try await client.query(
                    "INSERT INTO deliveries (notification_id, app_id, device_id) SELECT 1, 1, min(id) FROM devices", logger: TestDatabase.logger)
                let today = try await Self.integer("SELECT delivery_day(now())", client)
                #expect(try await Self.integer("SELECT count(*) FROM deliveries WHERE day = \(today) AND id >> 32 = \(today)", client) == 1)
            }
        }
    }

    static func integer(_ query: PostgresQuery, _ client: Database) async throws -> Int64? {
        for try await value in try await client.query(query, logger: TestDatabase.logger).decode(Int64?.self) { return value }
        return nil
    }
}
