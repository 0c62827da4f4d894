import Foundation
import PostgresNIO

/// Whose rows a batched delete reaches: every app's before the service's cutoff, or one app's
/// before its own, later cutoff.
struct RetentionScope: Sendable {
    /// nil: every app.
    let appID: Int64?
    let cutoff: Date
}

/// The deletes retention makes row by row, in batches of `batchSize`, each its own short
/// transaction.
extension RetentionStore {
    /// The apps that keep fewer days than `days`, each with its cutoff.
    func appsKeepingFewer(than days: Int, now: Date?) async throws -> [RetentionScope] {
        let rows = try await client.query(
            """
            SELECT id, COALESCE(\(now)::timestamptz, now()) - make_interval(days => retention_days)
            FROM apps WHERE retention_days < \(Int32(clamping: days))
            ORDER BY id
            """,
            logger: logger
        )
        var scopes: [RetentionScope] = []
        for try await (id, cutoff) in rows.decode((Int64, Date).self) { scopes.append(RetentionScope(appID: id, cutoff: cutoff)) }
        return scopes
    }

    /// One app's deliveries that will not be sent again (sent, failed, dead, cancelled), of its
    /// notifications sent before its cutoff (their day, as the partitions count it), notification
    /// by notification. A delivery still waiting or in flight stays, and keeps its notification;
    /// a notification still fanning out keeps them all (its unique keys stop a second push).
    func deleteSettledDeliveries(_ scope: RetentionScope) async throws -> Int {
        guard let appID = scope.appID else { return 0 }
        var total = 0
        var after: Int64 = 0
        while true {
            var notifications: [Int64] = []
            for try await id in try await client.query(
                """
                SELECT id FROM notifications
                WHERE app_id = \(appID) AND COALESCE(fanout_after, created_at) < \(scope.cutoff)
                  AND state <> 'fanning_out' AND id > \(after)
                ORDER BY id LIMIT \(batchSize)
                """,
                logger: logger
            ).decode(Int64.self) {
                notifications.append(id)
            }
            for notification in notifications {
                total += try await repeatBatches { try await deleteSettledDeliveries(ofNotification: notification) }
            }
            guard let last = notifications.last, notifications.count == batchSize else { return total }
            after = last
        }
    }

    /// Counted as retention (deliveries_count_changes): the notification keeps its counters.
    private func deleteSettledDeliveries(ofNotification notification: Int64) async throws -> Int {
        try await client.withTransaction(logger: logger) { connection in
            try await SettledDeliveries.delete(ofNotification: notification, limit: batchSize, on: connection, logger: logger)
        }
    }

    func deleteNotifications(_ scope: RetentionScope) async throws -> Int {
        try await client.query(
            """
            DELETE FROM notifications WHERE id IN (
                SELECT n.id FROM notifications n
                WHERE n.created_at < \(scope.cutoff) AND n.state <> 'fanning_out'
                  AND (\(scope.appID)::int8 IS NULL OR n.app_id = \(scope.appID))
                  AND NOT EXISTS (SELECT 1 FROM user_notifications u WHERE u.notification_id = n.id)
                  AND NOT EXISTS (SELECT 1 FROM deliveries q WHERE q.notification_id = n.id)
                ORDER BY n.id LIMIT \(batchSize)
                FOR UPDATE SKIP LOCKED
            )
            RETURNING id
            """,
            logger: logger
        ).count()
    }

    func deleteSandboxPushes(_ scope: RetentionScope) async throws -> Int {
        try await client.query(
            """
            DELETE FROM sandbox_pushes WHERE id IN (
                SELECT id FROM sandbox_pushes
                WHERE created_at < \(scope.cutoff) AND (\(scope.appID)::int8 IS NULL OR app_id = \(scope.appID))
                ORDER BY id LIMIT \(batchSize)
            )
            RETURNING id
            """,
            logger: logger
        ).count()
    }

    /// Devices gone that long ago: unregistered, invalidated by a gateway, or merged into another.
    /// Their events go with them; their deliveries are gone already (the device waits for that).
    func purgeDevices(_ scope: RetentionScope) async throws -> Int {
        try await client.query(
            """
            DELETE FROM devices WHERE id IN (
                SELECT d.id FROM devices d
                WHERE (d.unregistered_at < \(scope.cutoff) OR d.invalidated_at < \(scope.cutoff)
                       OR (d.merged_into IS NOT NULL AND d.updated_at < \(scope.cutoff)))
                  AND (\(scope.appID)::int8 IS NULL OR d.app_id = \(scope.appID))
                  AND NOT EXISTS (SELECT 1 FROM deliveries q WHERE q.device_id = d.id)
                  AND d.id NOT IN (SELECT m.merged_into FROM devices m WHERE m.merged_into IS NOT NULL)
                ORDER BY d.id LIMIT \(batchSize)
                FOR UPDATE SKIP LOCKED
            )
            RETURNING id
            """,
            logger: logger
        ).count()
    }

    /// Device history older than the cutoff, of devices that stay: what happened to a device
    /// (and which users it had) is kept as long as what was sent to it.
    func deleteDeviceHistory(_ scope: RetentionScope) async throws -> Int {
        try await client.query(
            """
            DELETE FROM device_events WHERE id IN (
                SELECT e.id FROM device_events e
                WHERE e.at < \(scope.cutoff)
                  AND (\(scope.appID)::int8 IS NULL OR e.device_id IN (SELECT id FROM devices WHERE app_id = \(scope.appID)))
                ORDER BY e.at LIMIT \(batchSize)
            )
            RETURNING id
            """,
            logger: logger
        ).count()
    }

    /// Webhook events that never left (their webhook paused or failing that long): each names a
    /// device and its user, and a receiver that has not answered for the whole period gets them no
    /// more. Delivered ones go sooner, by the webhook worker's own period.
    func deleteUnsentWebhookEvents(_ scope: RetentionScope) async throws -> Int {
        try await client.query(
            """
            DELETE FROM webhook_events WHERE id IN (
                SELECT e.id FROM webhook_events e
                WHERE e.batch_id IS NULL AND e.occurred_at < \(scope.cutoff)
                  AND (\(scope.appID)::int8 IS NULL OR e.webhook_id IN (SELECT id FROM webhooks WHERE app_id = \(scope.appID)))
                ORDER BY e.webhook_id, e.id LIMIT \(batchSize)
            )
            RETURNING id
            """,
            logger: logger
        ).count()
    }

    /// Live Activity and push-to-start tokens not renewed within the period: the activity has long
    /// ended on the phone (iOS ends one after at most twelve hours, and removes it after four more).
    func deleteStaleActivityTokens(_ scope: RetentionScope) async throws -> Int {
        let activityTokens = try await client.query(
            """
            DELETE FROM live_activity_tokens WHERE ctid IN (
                SELECT ctid FROM live_activity_tokens
                WHERE updated_at < \(scope.cutoff) AND (\(scope.appID)::int8 IS NULL OR app_id = \(scope.appID))
                LIMIT \(batchSize)
            )
            RETURNING 1
            """,
            logger: logger
        ).count()
        let startTokens = try await client.query(
            """
            DELETE FROM push_to_start_tokens WHERE ctid IN (
                SELECT s.ctid FROM push_to_start_tokens s
                WHERE s.updated_at < \(scope.cutoff)
                  AND (\(scope.appID)::int8 IS NULL OR s.device_id IN (SELECT id FROM devices WHERE app_id = \(scope.appID)))
                LIMIT \(batchSize)
            )
            RETURNING 1
            """,
            logger: logger
        ).count()
        return activityTokens + startTokens
    }

    func repeatBatches(_ batch: () async throws -> Int) async throws -> Int {
        var total = 0
        while true {
            let removed = try await batch()
            total += removed
            if removed < batchSize { return total }
        }
    }
}
