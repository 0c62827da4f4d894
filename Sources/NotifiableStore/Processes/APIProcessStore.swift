import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// The API processes that answer now, each known by the beats it sends.
public struct APIProcessStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Records a beat of process `id` and returns how many processes are live: this one and those
    /// that beat within `liveWithin`. Processes silent for ten times that are forgotten.
    public func beat(id: UUID, host: String, liveWithin: Duration) async throws -> Int {
        let seconds = liveWithin.seconds
        let rows = try await client.query(
            """
            WITH beat AS (
                INSERT INTO api_processes (id, host) VALUES (\(id), \(host))
                ON CONFLICT (id) DO UPDATE SET seen_at = now()
            ), forgotten AS (
                DELETE FROM api_processes WHERE seen_at < now() - make_interval(secs => \(seconds * 10))
            )
            SELECT (1 + count(*))::int8 FROM api_processes
            WHERE id <> \(id) AND seen_at >= now() - make_interval(secs => \(seconds))
            """,
            logger: logger
        )
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 1
    }

    /// Forgets process `id` (it is stopping), so the others take its share at their next beat.
    public func leave(id: UUID) async throws {
        _ = try await client.query("DELETE FROM api_processes WHERE id = \(id)", logger: logger)
    }
}
