import Logging
import PostgresNIO

/// Deliveries whose outcome is final (`sent`, `failed`, `dead`, `cancelled`), removed by
/// retention (`RetentionStore`) once their notification is old enough.
enum SettledDeliveries {
    /// Deletes up to `limit` of the notification's settled deliveries, in the caller's transaction;
    /// how many. Marked as retention (`notifiable.retention`), so the counting trigger
    /// (deliveries_count_changes) leaves the notification's counters as they were.
    static func delete(ofNotification notification: Int64, limit: Int, on connection: PostgresConnection, logger: Logger) async throws -> Int {
        try await connection.query("SET LOCAL notifiable.retention = 'on'", logger: logger)
        return try await connection.query(
            """
            DELETE FROM deliveries q
            USING (
                SELECT id, day FROM deliveries
                WHERE notification_id = \(notification) AND state IN \(unescaped: DeliveryStateList.settled)
                LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            ) AS settled
            WHERE q.id = settled.id AND q.day = settled.day
            RETURNING q.id
            """,
            logger: logger
        ).count()
    }
}
