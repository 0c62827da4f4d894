import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// A broadcast to an activity's channel, leased to a worker.
public struct ClaimedBroadcast: Sendable {
    public let id: Int64
    public let appID: Int64
    public let activityID: String
    public let notificationID: Int64
    public let channelID: String
    public let content: NotificationContent
    public let expiresAt: Date
    /// The channel keeps the latest broadcast for a device that is offline (Apple's
    /// message-storage-policy 1); without, APNs takes only `apns-expiration: 0`.
    public let messageStorage: Bool
    /// The app sends to the built-in gateways.
    public let sandbox: Bool
    /// 1 for the first.
    public let attempt: Int
}

/// The broadcasts of activities with an open channel (`activity_broadcasts`): one per update or
/// end, sent in order. A newer event takes the place of one still waiting, and one that a newer
/// event follows is cancelled before it is sent, so the channel's last word is always the newest.
enum ActivityBroadcasts {
    /// Queues an event's broadcast in the event's transaction; a waiting one takes its content.
    static func queue(
        appID: Int64, activityID: String, notificationID: Int64, channelID: String, content: String, expiresAt: Date,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query(
            """
            INSERT INTO activity_broadcasts (app_id, activity_id, notification_id, channel_id, content, expires_at)
            VALUES (\(appID), \(activityID), \(notificationID), \(channelID), \(content)::jsonb, \(expiresAt))
            ON CONFLICT (app_id, activity_id) WHERE state = 'available'
            DO UPDATE SET content = excluded.content, expires_at = excluded.expires_at, channel_id = excluded.channel_id, updated_at = now()
            """,
            logger: logger
        )
    }

    /// A lease run out makes its broadcast ready again (the worker sending it stopped), and one past
    /// its expiry is given up.
    static func tidy(on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            UPDATE activity_broadcasts SET state = 'retrying', locked_until = NULL, run_at = now(), updated_at = now(),
                   reason = 'lease ran out: the worker sending it stopped'
            WHERE state = 'running' AND locked_until < now()
            """,
            logger: logger
        )
        try await connection.query(
            """
            UPDATE activity_broadcasts SET state = 'dead', updated_at = now(), reason = 'expired before it could be sent'
            WHERE state IN ('available', 'retrying') AND expires_at <= now()
            """,
            logger: logger
        )
    }

    /// Takes up to `limit` ready broadcasts for `lease`, one per activity, none while an older one
    /// of the same activity is being sent; one that a newer event follows is cancelled first.
    static func claim(limit: Int, lease: Duration, on connection: PostgresConnection, logger: Logger) async throws -> [ClaimedBroadcast] {
        try await connection.query(
            """
            UPDATE activity_broadcasts b SET state = 'cancelled', updated_at = now(), reason = 'a newer event of the activity supersedes this one'
            WHERE b.state IN ('available', 'retrying')
              AND EXISTS (SELECT 1 FROM activity_broadcasts newer
                          WHERE newer.app_id = b.app_id AND newer.activity_id = b.activity_id AND newer.id > b.id)
            """,
            logger: logger
        )
        let rows = try await connection.query(
            """
            UPDATE activity_broadcasts b SET state = 'running', attempts = b.attempts + 1, updated_at = now(),
                   locked_until = now() + make_interval(secs => \(Double(lease.components.seconds)))
            FROM live_activities a, apps p
            WHERE p.id = b.app_id AND b.id IN (
                SELECT r.id FROM activity_broadcasts r
                WHERE r.state IN ('available', 'retrying') AND r.run_at <= now()
                  AND NOT EXISTS (SELECT 1 FROM activity_broadcasts older
                                  WHERE older.app_id = r.app_id AND older.activity_id = r.activity_id AND older.state = 'running')
                ORDER BY r.run_at LIMIT \(limit)
                FOR UPDATE SKIP LOCKED)
              AND a.app_id = b.app_id AND a.activity_id = b.activity_id
            RETURNING b.id, b.app_id, b.activity_id, b.notification_id, b.channel_id, b.content::text, b.expires_at,
                      a.channel_message_storage, p.delivery_mode = 'sandbox', b.attempts
            """,
            logger: logger
        )
        var claimed: [ClaimedBroadcast] = []
        for try await (id, appID, activityID, notificationID, channelID, content, expiresAt, storage, sandbox, attempts) in rows.decode(
            (Int64, Int64, String, Int64, String, String, Date, Bool, Bool, Int).self
        ) {
            claimed.append(
                ClaimedBroadcast(
                    id: id, appID: appID, activityID: activityID, notificationID: notificationID, channelID: channelID,
                    content: try StoredJSON.decode(NotificationContent.self, from: content), expiresAt: expiresAt, messageStorage: storage,
                    sandbox: sandbox, attempt: attempts))
        }
        return claimed
    }

    /// Records what became of a claimed broadcast; nothing when its lease was lost meanwhile.
    static func recording(
        _ broadcast: ClaimedBroadcast, state: DeliveryState, runAt: Date?, reason: String?, gatewayStatus: Int?
    ) -> PostgresQuery {
        """
        UPDATE activity_broadcasts SET state = \(state.rawValue), locked_until = NULL, run_at = COALESCE(\(runAt), run_at),
               reason = \(reason), gateway_status = \(gatewayStatus), updated_at = now(),
               sent_at = CASE WHEN \(state.rawValue) = 'sent' THEN now() END
        WHERE id = \(broadcast.id) AND state = 'running' AND attempts = \(broadcast.attempt)
        """
    }
}
