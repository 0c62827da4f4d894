import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Queues the background pushes that tell a user's devices a notification's new state.
enum SyncSignals {
    /// The providers whose devices take a push that shows nothing.
    static let silentProviders = Provider.allCases.filter(\.takesSilentPushes).map(\.rawValue)

    /// One sync delivery for each of the user's active devices but `excludedDeviceID` (the one
    /// that made the change), run after `delay`. Where a device already has one available for
    /// the notification, that one takes the newer content and keeps its run time, so a burst
    /// of changes within the delay sends a single signal. A signal's day (its partition) is the
    /// day it is queued, not its notification's, which may be long gone; a burst across midnight
    /// may therefore send two.
    static func enqueue(
        _ change: UserNotificationChange, appID: Int64, userAlias: String, excludedDeviceID: Int64?, expiresAt: Date,
        delay: Duration, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let content = try StoredJSON.text(SyncSignal.content(for: change, expiresAt: expiresAt))
        let delaySeconds = delay.seconds
        try await connection.query(
            """
            INSERT INTO deliveries (kind, notification_id, app_id, device_id, content, expires_at, priority, run_at)
            SELECT 'sync', \(change.notificationID), \(appID), d.id, \(content)::jsonb, \(expiresAt), \(SyncSignal.priority.queueRank),
                   now() + make_interval(secs => \(delaySeconds))
            FROM devices d
            WHERE d.app_id = \(appID) AND d.user_alias = \(userAlias) AND d.id <> \(excludedDeviceID ?? 0)
              AND d.unregistered_at IS NULL AND d.invalidated_at IS NULL AND d.merged_into IS NULL
              AND d.provider = ANY(\(Self.silentProviders)::text[])
            ORDER BY d.id
            ON CONFLICT (notification_id, device_id, day) WHERE kind = 'sync' AND state = 'available'
            DO UPDATE SET content = excluded.content, expires_at = excluded.expires_at, updated_at = now()
            """,
            logger: logger
        )
    }
}
