import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// `Database` with several servers, on real PostgreSQL: it pools connections to the first server
/// whose role suits, and moves when its server goes away and another suits. Two databases of the
/// test cluster stand for two servers; one made read-only (`default_transaction_read_only`)
/// answers as a standby would to `read-write`.
/// A hang fails the suite with its name within minutes, instead of stalling the whole run.
@Suite(.timeLimit(.minutes(3))) struct DatabaseFailoverTests {
    @Test func thePoolGoesToTheWritableServerAndMovesWhenItsServerIsLostAndAnotherTakesOver() async throws {
        try await TestDatabase.withFreshDatabase { first in
            try await TestDatabase.withFreshDatabase { second in
                try await Self.withAdmin { admin in
                    let names = [first, second].map { String($0.split(separator: "/").last!.prefix { $0 != "?" }) }
                    try await admin.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(names[0]) SET default_transaction_read_only = on"))
                    let servers = try [first, second].map { try DatabaseURL.servers(from: $0).servers[0] }
                    let database = Database(
                        servers: servers, target: .readWrite, logger: TestDatabase.logger, checkInterval: .milliseconds(100),
                        checkTimeout: .seconds(10))
                    let running = Task { try await database.run() }
                    defer { running.cancel() }

                    // The first host refuses writes: the pool is on the second.
                    #expect(try await Self.eventually { try await Self.currentDatabase(database) == names[1] }, "read-only first host skipped")
                    #expect(database.currentServer.name == servers[1].name)

                    // A statement under way on the second when the pool moves: long enough to be
                    // under way however the pool learns of the demotion (its watching connection
                    // ended at once, or its question unanswered for `checkTimeout`).
                    let underWay = Task {
                        try await database.withTransaction(logger: TestDatabase.logger) { connection in
                            for try await name in try await connection.query("SELECT current_database() FROM pg_sleep(15)", logger: TestDatabase.logger)
                                .decode(String.self)
                            {
                                return name
                            }
                            return ""
                        }
                    }
                    // Under way for real (on a loaded machine the pool may take a while to open
                    // the connection): otherwise the demotion below would end it rather than wait for it.
                    #expect(
                        try await Self.eventually {
                            try await Self.count(
                                admin,
                                "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(names[1])' AND query LIKE '%pg_sleep(15)%' AND state = 'active'")
                                == 1
                        }, "the statement is under way")

                    // The second turns read-only and its other sessions go (a primary demoted);
                    // the first accepts writes again (a standby promoted).
                    try await admin.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(names[1]) SET default_transaction_read_only = on"))
                    try await admin.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(names[0]) RESET default_transaction_read_only"))
                    try await admin.query(
                        PostgresQuery(
                            unsafeSQL: """
                                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                                WHERE datname = '\(names[1])' AND query NOT LIKE '%pg_sleep%'
                                """))
                    #expect(try await Self.eventually { try await Self.currentDatabase(database) == names[0] }, "moved to the writable one")
                    // The statement under way on the old server was answered, not cut off by the move.
                    #expect(try await Self.within("the statement under way") { try await underWay.value } == names[1])
                    // It started on the first host, unasked; then went to the second; then back.
                    #expect(database.moves == 2)
                    // Statements go there and write.
                    try await Self.within("a write after the move") { try await database.query("CREATE TABLE written_after_the_move (id int)") }
                }
            }
        }
    }

    @Test func withNoServerSuitingItKeepsAskingAndStaysWhereItStarted() async throws {
        try await TestDatabase.withFreshDatabase { only in
            try await Self.withAdmin { admin in
                let name = String(only.split(separator: "/").last!.prefix { $0 != "?" })
                try await admin.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(name) SET default_transaction_read_only = on"))
                let database = Database(
                    servers: try DatabaseURL.servers(from: only).servers, target: .readWrite, logger: TestDatabase.logger,
                    checkInterval: .milliseconds(100))
                #expect(await database.chooseServer() == false)
                let running = Task { try await database.run() }
                defer { running.cancel() }
                try await Task.sleep(for: .milliseconds(500))
                #expect(database.moves == 0)
                // Reads still work on the server it has; writes are refused as on any standby.
                #expect(try await Self.currentDatabase(database) == name)
                // A write refused by a server that turned read-only (SQLSTATE 25006) counts as the
                // database being unavailable: the API answers 503 with Retry-After, not 500.
                do {
                    try await database.query("CREATE TABLE refused (id int)")
                    Issue.record("a read-only server accepted a write")
                } catch {
                    #expect(isDatabaseUnavailable(error), "\(String(reflecting: error))")
                }
            }
        }
    }

    static func withAdmin<T: Sendable>(_ body: @Sendable (Database) async throws -> T) async throws -> T {
        try await withPostgresClient(try DatabaseURL.configuration(from: try TestDatabase.url()), logger: TestDatabase.logger, body)
    }

    static func currentDatabase(_ database: Database) async throws -> String? {
        for try await name in try await database.query("SELECT current_database()").decode(String.self) { return name }
        return nil
    }

    /// Whether `condition` holds within 60 s; an attempt that does not answer within 10 s counts as
    /// not holding, so a statement stuck on a pool being moved cannot stall the test. Both are
    /// patience for a starved machine: a pool that never moves fails either way.
    static func eventually(_ condition: @escaping @Sendable () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if (try? await withDeadline(.seconds(10), condition)) == true { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// `operation`'s answer, or a failure naming `what` when it gives none within 60 s (a
    /// statement stranded on a closed connection would wait for ever).
    static func within<T: Sendable>(_ what: String, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            return try await withDeadline(.seconds(60), operation)
        } catch is DeadlineExceeded {
            Issue.record("\(what) gave no answer within 60 s")
            throw DeadlineExceeded()
        }
    }

    static func count(_ database: Database, _ sql: String) async throws -> Int64 {
        for try await count in try await database.query(PostgresQuery(unsafeSQL: sql)).decode(Int64.self) { return count }
        return 0
    }
}
