import Logging
import PostgresNIO

/// Deliveries that ran out of attempts (`dead`), put back in the queue by an operator
/// (`QueueAdminStore.requeueDead`).
enum DeadDeliveries {
    /// Makes dead pushes available again with a fresh attempt budget: those named, or all of the
    /// notification's, the app's (or everyone's) when none are named; Live Activity events too. Those
    /// to devices that are gone or invalid, of a cancelled notification, or past their expiry stay
    /// dead, and so do sync signals (a newer state replaces theirs). Returns the day of each one re-queued.
    static func requeue(
        appID: Int64?, ids: [Int64]?, notificationID: Int64?, on connection: PostgresConnection, logger: Logger
    ) async throws
        -> [Int32]
    {
        let rows = try await connection.query(
            """
            UPDATE deliveries q SET state = 'available', attempts = 0, run_at = now(), updated_at = now(), dead_at = NULL
            FROM devices d, notifications n
            WHERE q.state = 'dead' AND q.kind <> 'sync' AND d.id = q.device_id AND n.id = q.notification_id
              AND d.unregistered_at IS NULL AND d.invalidated_at IS NULL
              AND n.state <> 'cancelled'
              AND (COALESCE(q.expires_at, n.expires_at) IS NULL OR COALESCE(q.expires_at, n.expires_at) > now())
              -- A Live Activity's event goes again only when it is the device's newest of the activity:
              -- an older one would be superseded, and two waiting at once are one too many.
              AND (q.kind = 'push' OR NOT EXISTS (
                  SELECT 1 FROM deliveries newer
                  WHERE newer.kind = q.kind AND newer.notification_id = q.notification_id AND newer.device_id = q.device_id
                    AND newer.id > q.id))
              AND (\(appID)::int8 IS NULL OR q.app_id = \(appID)::int8)
              AND (\(ids)::int8[] IS NULL OR q.id = ANY(\(ids)::int8[]))
              AND (\(notificationID)::int8 IS NULL OR q.notification_id = \(notificationID)::int8)
            RETURNING q.day
            """,
            logger: logger
        )
        var days: [Int32] = []
        for try await day in rows.decode(Int32.self) { days.append(day) }
        return days
    }
}
