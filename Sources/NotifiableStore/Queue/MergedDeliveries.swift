import Logging
import PostgresNIO

/// The deliveries of a device merged into the one that took its token (`DeviceStore`): what the
/// token already had through either row is not sent again, and what still waits moves to the
/// survivor. What cannot move is cancelled after, with the merged device's other waiting work
/// (`WaitingDeliveries`).
enum MergedDeliveries {
    static func move(from mergedID: Int64, to survivorID: Int64, on connection: PostgresConnection, logger: Logger) async throws {
        // What the token already got (or is getting) through the retired row, it must not get
        // again through the survivor.
        try await connection.query(
            """
            UPDATE deliveries AS pending SET state = 'cancelled', cancelled_at = now(), updated_at = now(),
                                             reason = 'device merged: the token already had this notification'
            WHERE pending.device_id = \(survivorID) AND pending.kind = 'push' AND pending.state IN \(unescaped: DeliveryStateList.waiting)
              AND EXISTS (SELECT 1 FROM deliveries AS other
                          WHERE other.notification_id = pending.notification_id AND other.kind = 'push' AND other.device_id = \(mergedID)
                            AND other.state IN ('running', 'sent'))
            """,
            logger: logger
        )
        // Pushes move where the survivor has none of the notification; a sync signal or a Live
        // Activity event carries the latest state, so it moves where the survivor has none waiting. The caller cancels
        // the rest.
        try await connection.query(
            """
            UPDATE deliveries AS moved SET device_id = \(survivorID), updated_at = now()
            WHERE moved.device_id = \(mergedID) AND moved.state IN \(unescaped: DeliveryStateList.waiting)
              AND CASE WHEN moved.kind = 'push' THEN NOT EXISTS (
                           SELECT 1 FROM deliveries AS other
                           WHERE other.notification_id = moved.notification_id AND other.kind = 'push' AND other.device_id = \(survivorID))
                       ELSE moved.state = 'available' AND NOT EXISTS (
                           SELECT 1 FROM deliveries AS other
                           WHERE other.notification_id = moved.notification_id AND other.kind = moved.kind
                             AND other.state = 'available' AND other.device_id = \(survivorID)) END
            """,
            logger: logger
        )
    }
}
