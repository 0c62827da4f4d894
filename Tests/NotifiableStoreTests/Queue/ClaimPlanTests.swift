import Foundation
import NotifiableStore
import NotifiableTesting
import Testing

/// How PostgreSQL carries out a claim, read from `auto_explain` in a `psql` session: the plan a
/// worker gets depends on the table's statistics, which no result of a small test would show.
@Suite struct ClaimPlanTests {
    /// Right after a broadcast's fan-out the table has no statistics yet. A claim must still walk
    /// the ready index in order and stop after its batch, rather than read every ready delivery
    /// and sort them all by run time (which it did, at 45 ms a batch of 500 on 100,000 devices).
    @Test func aClaimOnAFreshlyFilledQueueWalksTheWaitingIndexInsteadOfSortingTheQueue() async throws {
        try await withTestService(isolatedDatabase: true) { _, service in
            let app = try await service.createApp()
            try await service.postgres.query(
                """
                WITH notification AS (
                    INSERT INTO notifications (app_id, content, targeting, state)
                    VALUES (\(app.app.id), '{"message": "x"}', '{"all": true}', 'fanned_out') RETURNING id
                ), device AS (
                    INSERT INTO devices (app_id, provider, token)
                    SELECT \(app.app.id), 'apns', lpad(to_hex(n), 64, '0') FROM generate_series(1, 20000) AS n RETURNING id
                )
                INSERT INTO deliveries (notification_id, app_id, device_id)
                SELECT notification.id, \(app.app.id), device.id FROM notification, device
                """,
                logger: TestDatabase.logger
            )
            let plan = try await Self.explained("SELECT count(*) FROM claim_deliveries(500, 60)", in: service.configuration.databaseURL)
            let claim = try #require(plan.components(separatedBy: "Query Text:").first { $0.contains("FOR UPDATE SKIP LOCKED") })
            // The waiting index of today's partition (each partition's copy of deliveries_waiting_idx
            // is named for its day and columns).
            #expect(claim.contains("_app_id_priority_run_at_idx on deliveries_"), "\(claim)")
            // Ready rows are an index range, so deliveries backing off until later are never read.
            let readyRange = claim.split(separator: "\n").contains { $0.contains("Index Cond:") && $0.contains("run_at <= now()") }
            #expect(readyRange, "\(claim)")
            // A merge of the days' index scans keeps run_at order without sorting.
            let sorts = claim.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix("->  Sort ") }
            #expect(!sorts, "\(claim)")
            #expect(plan.split(separator: "\n").contains("500"), "the claim took a whole batch: \(plan)")
        }
    }

    /// The plans `auto_explain` logs while `statement` runs (functions' statements included),
    /// in a transaction that is rolled back.
    static func explained(_ statement: String, in url: String) async throws -> String {
        let (status, text) = try await runProgram(
            TestDatabase.clientProgram("psql"),
            [
                "--dbname=\(url)", "--no-psqlrc", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                "-c", "LOAD 'auto_explain'", "-c", "SET auto_explain.log_min_duration = 0",
                "-c", "SET auto_explain.log_nested_statements = on", "-c", "SET client_min_messages = log",
                "-c", "BEGIN", "-c", statement, "-c", "ROLLBACK",
            ])
        #expect(status == 0, "\(text)")
        return text
    }
}
