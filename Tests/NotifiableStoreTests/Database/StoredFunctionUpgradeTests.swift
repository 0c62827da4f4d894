import Foundation
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// Stored functions and triggers once lived in the numbered migrations, several generations of
/// them; now each is one file the migrator applies after the migrations. A database migrated
/// before that move — `Fixtures/database-migrated-to-0030.sql.gz`, a `pg_dump --no-owner
/// --no-privileges` of one migrated to 0030 by that build, with an app, four devices and a
/// notification whose counts are not folded yet — upgrades to exactly the schema of a database
/// built fresh, its rows intact and its triggers counting.
@Suite struct StoredFunctionUpgradeTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/database-migrated-to-0030.sql.gz")

    @Test func aDatabaseMigratedBeforeTheMoveUpgradesToTheSchemaOfAFreshOne() async throws {
        let migrations = try Migrator.load(from: TestDatabase.migrationsDirectory)
        try await TestDatabase.withFreshDatabase { upgraded in
            try await TestDatabase.withFreshDatabase { fresh in
                try await Self.restore(into: upgraded)
                try await withPostgresClient(try DatabaseURL.configuration(from: upgraded), logger: TestDatabase.logger) { client in
                    _ = try await Migrator(client: client, logger: TestDatabase.logger).migrate(migrations)
                    // Rows kept, counts read as before, and the triggers go on counting.
                    let counters = NotificationCounterStore(client: client, logger: TestDatabase.logger)
                    let before = try await counters.counters(notificationIDs: [1])[1]
                    #expect([before?.targeted, before?.sent, before?.pending] == [4, 3, 1])
                    _ = try await client.query("UPDATE deliveries SET state = 'sent', sent_at = now() WHERE state = 'available'", logger: TestDatabase.logger)
                    #expect(try await counters.counters(notificationIDs: [1])[1]?.sent == 4)
                    // The devices' counts, kept per column before 0035 and per class since, read the same;
                    // the devices' changes after the upgrade are counted too.
                    let devices = DeviceCountStore(client: client, logger: TestDatabase.logger)
                    let app = try await Self.count("SELECT min(id) FROM apps", client)
                    let reachable = try await Self.count("SELECT count(*) FROM devices WHERE invalidated_at IS NULL AND unregistered_at IS NULL", client)
                    #expect(reachable == 4)
                    #expect(try await devices.counts(appID: app).reachable.values.reduce(0, +) == reachable)
                    _ = try await client.query(
                        "UPDATE devices SET invalidated_at = now() WHERE id = (SELECT min(id) FROM devices)", logger: TestDatabase.logger)
                    #expect(try await devices.counts(appID: app).invalidated == 1)
                    _ = try await devices.fold()
                    #expect(try await devices.counts(appID: app).reachable.values.reduce(0, +) == reachable - 1)
                }
                try await withPostgresClient(try DatabaseURL.configuration(from: fresh), logger: TestDatabase.logger) { client in
                    _ = try await Migrator(client: client, logger: TestDatabase.logger).migrate(migrations)
                }
                let upgradedSchema = try await Self.schema(of: upgraded)
                let freshSchema = try await Self.schema(of: fresh)
                #expect(upgradedSchema.count > 1000, "a schema was dumped")
                let onlyUpgraded = upgradedSchema.filter { !freshSchema.contains($0) }
                let onlyFresh = freshSchema.filter { !upgradedSchema.contains($0) }
                #expect(onlyUpgraded.isEmpty && onlyFresh.isEmpty, "only upgraded: \(onlyUpgraded.prefix(20)); only fresh: \(onlyFresh.prefix(20))")
                #expect(upgradedSchema.count == freshSchema.count, "the same lines, as many times")
            }
        }
    }

    /// A Live Activity's events queued before 0032 were sync deliveries, not counted: the upgrade
    /// makes them `activity` deliveries and counts them, so the kept counters equal a recount, and
    /// the triggers count what happens to them next.
    @Test func aLiveActivitysEarlierEventsAreCountedAfterTheUpgrade() async throws {
        let migrations = try Migrator.load(from: TestDatabase.migrationsDirectory)
        try await TestDatabase.withFreshDatabase { url in
            try await Self.restore(into: url)
            try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { client in
                let log = TestDatabase.logger
                _ = try await client.query("SELECT create_delivery_partition(delivery_day(now()))", logger: log)
                _ = try await client.query(
                    """
                    WITH made AS (
                        INSERT INTO notifications (app_id, content, targeting, state, fanned_out_at)
                        SELECT min(id), '{}', '{}', 'fanned_out', now() FROM apps RETURNING id, app_id
                    ), activity AS (
                        INSERT INTO live_activities (app_id, activity_id, notification_id) SELECT app_id, 'before-0032', id FROM made
                    )
                    INSERT INTO deliveries (kind, notification_id, app_id, device_id, content, state, push_token, sent_at)
                    SELECT 'sync', made.id, made.app_id, d.id, '{}', s.state, 'ab', CASE WHEN s.state = 'sent' THEN now() END
                    FROM made, (SELECT min(id) AS id FROM devices) d, (VALUES ('available'), ('sent')) AS s(state)
                    """,
                    logger: log)
                let id = try await Self.count("SELECT notification_id FROM live_activities WHERE activity_id = 'before-0032'", client)
                #expect(id > 0)
                _ = try await Migrator(client: client, logger: log).migrate(migrations)
                #expect(try await Self.count("SELECT count(*) FROM deliveries WHERE notification_id = \(id) AND kind = 'activity'", client) == 2)
                let counters = NotificationCounterStore(client: client, logger: log)
                let after = try #require(try await counters.counters(notificationIDs: [id])[id])
                #expect([after.targeted, after.sent, after.pending] == [2, 1, 1])
                _ = try await client.query(
                    "UPDATE deliveries SET state = 'sent', sent_at = now() WHERE notification_id = \(id) AND state = 'available'", logger: log)
                #expect(try await counters.counters(notificationIDs: [id])[id]?.sent == 2)
            }
        }
    }

    /// One that stopped before the last migration that defined a function as it was then would run
    /// the rest without the triggers their data moves were written beside: it is refused, saying
    /// what to do, and left as it was.
    @Test func aDatabaseThatStoppedPartWayBeforeTheMoveIsRefusedWithWhatToDo() async throws {
        let migrations = try Migrator.load(from: TestDatabase.migrationsDirectory)
        try await TestDatabase.withFreshDatabase { url in
            try await Self.restore(into: url)
            try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { client in
                // As if it had stopped before 0026, the last migration that defined a function.
                _ = try await client.query("DELETE FROM schema_migrations WHERE version >= '0026'", logger: TestDatabase.logger)
                do {
                    try await Migrator(client: client, logger: TestDatabase.logger).migrate(migrations)
                    Issue.record("a database that stopped part way was migrated")
                } catch let error as MigrationError {
                    #expect(error.description.contains("stopped before migration 0026"), "\(error)")
                    #expect(error.description.contains("notifiable migrate"), "\(error)")
                }
                #expect(try await Self.count("SELECT count(*) FROM schema_migrations WHERE version >= '0026'", client) == 0)
            }
        }
    }

    /// The restore runs in psql, as an operator would run the dump.
    static func restore(into url: String) async throws {
        let psql = try TestDatabase.clientProgram("psql").path
        let (status, output) = try await runProgram(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "gzip -dc \"$0\" | \"$1\" -v ON_ERROR_STOP=1 -q -o /dev/null \"$2\"", fixture.path, psql, url])
        #expect(status == 0, "\(output)")
    }

    /// The schema as `pg_dump --schema-only` writes it, one line each, without the day partitions of
    /// `deliveries` (their names are the days each database was made on) and without comments.
    static func schema(of url: String) async throws -> [String] {
        let (status, output) = try await runProgram(
            try TestDatabase.clientProgram("pg_dump"),
            ["--schema-only", "--no-owner", "--no-privileges", "--exclude-table=deliveries_2*", "--dbname=\(url)"])
        #expect(status == 0, "\(output)")
        return output.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
            // pg_dump's \restrict and \unrestrict lines carry a key of its own, new on every run.
            .filter { !$0.hasPrefix("--") && !$0.contains("deliveries_2") && !$0.hasPrefix("\\restrict") && !$0.hasPrefix("\\unrestrict") }
    }

    static func count(_ query: PostgresQuery, _ client: Database) async throws -> Int64 {
        for try await value in try await client.query(query, logger: TestDatabase.logger).decode(Int64.self) { return value }
        return -1
    }
}
