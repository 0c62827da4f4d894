import Logging
import PostgresNIO

/// The deliveries of erased devices: what is waiting is cancelled, and every row keeps only what
/// the counters need (state, times, reason) — the content a sync signal or a Live Activity event carried and the Live
/// Activity token a push went to are cleared.
enum ErasedDeliveries {
    /// Cancels the devices' waiting deliveries; how many were cancelled.
    static func cancelWaiting(ofDevices ids: [Int64], on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        let floor = try await DeliveryPartitions.queueFloor(on: connection, logger: logger)
        return Int64(
            try await connection.query(
                """
                UPDATE deliveries SET state = 'cancelled', cancelled_at = now(), updated_at = now(), reason = 'device erased'
                WHERE device_id = ANY(\(ids)::int8[]) AND state IN \(unescaped: DeliveryStateList.waiting) AND day >= \(floor)
                RETURNING 1
                """,
                logger: logger
            ).count())
    }

    /// Clears what the devices' deliveries carried; how many deliveries the devices had.
    static func anonymise(ofDevices ids: [Int64], on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        try await connection.query(
            """
            UPDATE deliveries SET content = CASE WHEN kind <> 'push' THEN '{}'::jsonb END, push_token = NULL
            WHERE device_id = ANY(\(ids)::int8[])
              AND (push_token IS NOT NULL OR (kind <> 'push' AND content <> '{}'::jsonb))
            """,
            logger: logger
        )
        return try await PersonalRows.count(
            "SELECT count(*) FROM deliveries WHERE device_id = ANY(\(ids)::int8[])", on: connection, logger: logger)
    }
}
