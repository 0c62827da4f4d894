import Logging
import NotifiableCore
import PostgresNIO

/// What a device reports of a push it was sent: delivered, opened (`NotificationStore.record`).
enum ReportedDeliveries {
    /// Records the event on the device's push of the notification, in `days` (its partitions).
    /// Idempotent: the first report's time stays; opened implies delivered. With `userAlias`, the
    /// device must belong to that user. Nil when there was no such delivery; otherwise whether the
    /// notification is stateful.
    static func record(
        _ event: DeliveryEvent, notificationID: Int64, days: [Int32], deviceID: Int64, appID: Int64, userAlias: String?, on client: Database,
        logger: Logger
    ) async throws -> Bool? {
        let opened = event == .opened
        // Committed before the SDK is told so: it does not report an event twice.
        let rows = try await client.committing(
            """
            UPDATE deliveries q SET
                delivered_at = COALESCE(q.delivered_at, now()),
                opened_at = CASE WHEN \(opened) THEN COALESCE(q.opened_at, now()) ELSE q.opened_at END
            FROM devices d, notifications n
            WHERE q.notification_id = \(notificationID) AND q.day = ANY(\(days)::int4[])
              AND q.device_id = \(deviceID) AND q.app_id = \(appID) AND q.kind = 'push'
              AND d.id = q.device_id AND n.id = q.notification_id
              AND (\(userAlias)::text IS NULL OR d.user_alias = \(userAlias)::text)
            RETURNING n.stateful
            """,
            logger: logger
        )
        return try rows.first?.decode(Bool.self)
    }
}
