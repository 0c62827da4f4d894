import Logging
import PostgresNIO

/// Deliveries not yet handed to a gateway (`available`, `retrying`): what unregistering or
/// invalidating a device, merging it away, or cancelling a notification stops. Deliveries in
/// flight are left to the claim, which cancels them if they come back to the queue.
///
/// Nothing waits below the queue's floor (Migrations/0017), so each statement reads the floor first
/// and names it: the planner then reads the last day or two, not every day kept. A delivery made
/// waiting below it by a transaction still open is not cancelled here, as no uncommitted delivery
/// ever was: the claim cancels it when it finds the device or the notification gone.
enum WaitingDeliveries {
    enum Owner {
        case device(Int64)
        case notification(Int64)
    }

    static func cancel(of owner: Owner, reason: String, on connection: PostgresConnection, logger: Logger) async throws {
        let floor = try await DeliveryPartitions.queueFloor(on: connection, logger: logger)
        switch owner {
        case .device(let id):
            try await connection.query(
                """
                UPDATE deliveries SET state = 'cancelled', cancelled_at = now(), updated_at = now(), reason = \(reason)
                WHERE device_id = \(id) AND state IN \(unescaped: DeliveryStateList.waiting) AND day >= \(floor)
                """,
                logger: logger
            )
        case .notification(let id):
            try await connection.query(
                """
                UPDATE deliveries SET state = 'cancelled', cancelled_at = now(), updated_at = now(), reason = \(reason)
                WHERE notification_id = \(id) AND state IN \(unescaped: DeliveryStateList.waiting) AND day >= \(floor)
                """,
                logger: logger
            )
        }
    }

    /// Cancels the waiting deliveries of several devices at once, each with its own reason.
    static func cancel(ofDevices ids: [Int64], reasons: [String], on connection: PostgresConnection, logger: Logger) async throws {
        let floor = try await DeliveryPartitions.queueFloor(on: connection, logger: logger)
        try await connection.query(
            """
            UPDATE deliveries q SET state = 'cancelled', cancelled_at = now(), updated_at = now(), reason = r.reason
            FROM unnest(\(ids)::int8[], \(reasons)::text[]) AS r(device_id, reason)
            WHERE q.device_id = r.device_id AND q.state IN \(unescaped: DeliveryStateList.waiting) AND q.day >= \(floor)
            """,
            logger: logger
        )
    }
}
