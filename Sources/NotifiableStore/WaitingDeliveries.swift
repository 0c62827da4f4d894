import Logging
import PostgresNIO

/// Deliveries not yet handed to a gateway (`available`, `retrying`): what unregistering or
/// invalidating a device, merging it away, or cancelling a notification stops. Deliveries in
/// flight are left to the claim, which cancels them if they come back to the queue.
enum WaitingDeliveries {
    enum Owner {
        case device(Int64)
        case notification(Int64)
    }

    static func cancel(of owner: Owner, reason: String, on connection: PostgresConnection, logger: Logger) async throws {
        switch owner {
        case .device(let id):
            try await connection.query(
                """
                UPDATE deliveries SET state = 'cancelled', cancelled_at = now(), updated_at = now(), reason = \(reason)
                WHERE device_id = \(id) AND state IN ('available', 'retrying')
                """,
                logger: logger
            )
        case .notification(let id):
            try await connection.query(
                """
                UPDATE deliveries SET state = 'cancelled', cancelled_at = now(), updated_at = now(), reason = \(reason)
                WHERE notification_id = \(id) AND state IN ('available', 'retrying')
                """,
                logger: logger
            )
        }
    }
}
