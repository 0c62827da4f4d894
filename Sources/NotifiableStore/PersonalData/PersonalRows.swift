import Logging
import PostgresNIO

/// Small helpers of the erase and export statements.
enum PersonalRows {
    /// Runs a statement answering one count.
    static func count(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        for try await count in try await connection.query(query, logger: logger).decode(Int64.self) { return count }
        return 0
    }

    /// The app's devices that have or ever had `alias`, with the rows merged into them (which
    /// hold tokens the person's device had), not yet erased.
    static func devices(of alias: String, appID: Int64, on connection: PostgresConnection, logger: Logger) async throws -> [Int64] {
        // The app id goes in through a sub-select so the planner takes the alias indexes, as in
        // DeviceStore.merge.
        let rows = try await connection.query(
            """
            WITH RECURSIVE person (id) AS (
                SELECT id FROM devices WHERE app_id = (SELECT \(appID)::int8) AND user_alias = \(alias)
                UNION
                SELECT e.device_id FROM device_events e JOIN devices d ON d.id = e.device_id
                WHERE e.previous_alias = \(alias) AND d.app_id = (SELECT \(appID)::int8)
                UNION
                SELECT merged.id FROM devices merged JOIN person ON merged.merged_into = person.id
            )
            SELECT d.id FROM devices d JOIN person USING (id) WHERE d.erased_at IS NULL ORDER BY d.id
            """,
            logger: logger
        )
        var ids: [Int64] = []
        for try await id in rows.decode(Int64.self) { ids.append(id) }
        return ids
    }
}
