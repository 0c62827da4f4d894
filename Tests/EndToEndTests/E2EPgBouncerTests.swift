import Foundation
import NotifiableApp
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// The service behind a real PgBouncer in transaction pooling, two server connections per
/// database, as deploy/pgbouncer/pgbouncer.ini sets it up (`NOTIFIABLE_DATABASE_POOL_MODE=transaction`,
/// LISTEN and retention's lock over `NOTIFIABLE_SESSION_DATABASE_URL`, here PostgreSQL itself).
@Suite(.timeLimit(.minutes(5))) struct E2EPgBouncerTests {
    static func behindPgBouncer(_ direct: String, _ bouncer: PgBouncerFixture) -> (inout ServerConfiguration) -> Void {
        { configuration in
            configuration.databaseURL = bouncer.url(through: direct)
            configuration.databasePoolMode = .transaction
            configuration.sessionDatabaseURL = direct
        }
    }

    /// Migrated, registered (the batched upsert, unnamed), sent, woken and counted through PgBouncer.
    @Test func theServiceRegistersSendsAndCountsBehindATransactionPooler() async throws {
        try await withFakeAPNs { gateway in
            try await TestDatabase.withFreshDatabase { direct in
                try await PgBouncerFixture.with { bouncer in
                    try await withTestService(onDatabase: direct, workers: true, configure: Self.behindPgBouncer(direct, bouncer)) {
                        client, service in
                        let app = try await service.createApp()
                        try await service.connectAPNs(appID: app.app.id, to: gateway)
                        // Many at once: batches of registrations on connections PgBouncer hands round.
                        let ids = try await withThrowingTaskGroup(of: Int64.self) { group in
                            for n in 0..<60 {
                                group.addTask {
                                    try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xB0_0000 + n), alias: "u\(n % 6)")
                                }
                            }
                            return try await group.reduce(into: []) { $0.append($1) }
                        }
                        #expect(Set(ids).count == 60)
                        // Registered again with a new alias: the upsert's update, also unnamed.
                        let again = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xB0_0000), alias: "moved")
                        #expect(again == ids.min() || ids.contains(again))

                        let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "Through PgBouncer", "all": true}"#)
                        #expect(try await Pipeline.settled(service, id))
                        #expect(try await service.deliveries(of: id, in: "sent") == 60)
                        #expect(gateway.acceptedPushes.count == 60)
                        #expect(Set(gateway.acceptedPushes.map(\.token)).count == 60, "every device reached once")
                        #expect(bouncer.log.contains("prepared statement") == false, "\(bouncer.log.suffix(2000))")
                    }
                }
            }
        }
    }

    /// The LISTEN that wakes an idle worker runs over the session URL: a notification goes out at
    /// once, not at the next poll (two minutes here).
    @Test func anIdleWorkerBehindPgBouncerIsWokenOverItsSessionConnection() async throws {
        try await withFakeAPNs { gateway in
            try await TestDatabase.withFreshDatabase { direct in
                try await PgBouncerFixture.with { bouncer in
                    let configure = Self.behindPgBouncer(direct, bouncer)
                    try await withTestService(
                        onDatabase: direct, workers: true,
                        configure: {
                            configure(&$0)
                            $0.worker.pollInterval = .seconds(120)
                        }
                    ) { client, service in
                        let app = try await service.createApp()
                        try await service.connectAPNs(appID: app.app.id, to: gateway)
                        let token = Pipeline.token(0xB0_1157)
                        let device = try await Pipeline.register(client, app.deviceCredential, token: token)
                        let listening = try await service.eventually {
                            try await service.integer(
                                """
                                SELECT count(*) FROM pg_stat_activity
                                WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND application_name = 'notifiable-session'
                                """) ?? 0 > 0
                        }
                        #expect(listening, "the worker listens over NOTIFIABLE_SESSION_DATABASE_URL")
                        try await Task.sleep(for: .seconds(1))
                        let sent = ContinuousClock.now
                        _ = try await Pipeline.send(client, app.serverCredential, #"{"message": "Now", "device_ids": [\#(device)]}"#)
                        #expect(try await service.eventually { !gateway.pushes(to: token).isEmpty })
                        #expect(ContinuousClock.now - sent < .seconds(60), "woken, not at the 120 s poll")
                    }
                }
            }
        }
    }

    /// Migrations through PgBouncer: several processes at once, and again afterwards. Their lock
    /// is each transaction's own, so none is left behind on a server connection that PgBouncer
    /// gives to someone else (a session's lock would make the next run wait for ever).
    @Test func migrationsThroughPgBouncerRunOnceEachAndLeaveNoLockBehind() async throws {
        try await TestDatabase.withFreshDatabase { direct in
            try await PgBouncerFixture.with { bouncer in
                let pooled = bouncer.url(through: direct)
                let migrations = try Migrator.load(from: TestDatabase.migrationsDirectory)
                let applied = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<3 {
                        group.addTask {
                            try await withPostgresClient(try DatabaseURL.configuration(from: pooled), logger: TestDatabase.logger) { client in
                                try await Migrator(client: client, logger: TestDatabase.logger).migrate(migrations).count
                            }
                        }
                    }
                    return try await group.reduce(0, +)
                }
                #expect(applied == migrations.count, "each migration applied by exactly one of the three")
                try await withPostgresClient(try DatabaseURL.configuration(from: direct), logger: TestDatabase.logger) { client in
                    let locks = try await client.query(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                    ).collect()
                    #expect(try locks.first?.decode(Int64.self) == 0, "no advisory lock held after the migrations")
                }
                let again = try await withDeadline(.seconds(60)) {
                    try await withPostgresClient(try DatabaseURL.configuration(from: pooled), logger: TestDatabase.logger) { client in
                        try await Migrator(client: client, logger: TestDatabase.logger).migrate(migrations).count
                    }
                }
                #expect(again == 0)
            }
        }
    }

    /// Retention's pass drops past days under its lock over the session connection, and deletes
    /// the rest in short transactions through PgBouncer.
    @Test func retentionRunsBehindPgBouncer() async throws {
        try await TestDatabase.withFreshDatabase { direct in
            try await PgBouncerFixture.with { bouncer in
                try await withTestService(onDatabase: direct, configure: Self.behindPgBouncer(direct, bouncer)) { _, service in
                    try await withPostgresClient(try DatabaseURL.configuration(from: direct), logger: TestDatabase.logger) { sessions in
                        let retention = RetentionStore(client: service.postgres, sessions: sessions, logger: TestDatabase.logger)
                        let report = try await retention.run(keepingDays: 30, now: Date().addingTimeInterval(90 * 86_400))
                        #expect(report.droppedPartitions.count >= 1, "the days made at start are past, 90 days on")
                        let again = try await retention.run(keepingDays: 30, now: Date().addingTimeInterval(90 * 86_400))
                        #expect(again.droppedPartitions.isEmpty)
                        let locks = try await sessions.query(
                            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                        ).collect()
                        #expect(try locks.first?.decode(Int64.self) == 0)
                    }
                }
            }
        }
    }
}
