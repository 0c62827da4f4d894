import Foundation
import Logging
import PostgresNIO

/// The deliveries of a Live Activity's events (`LiveActivityStore.send`): one `sync` delivery per
/// token (kind `activity`), on the activity's notification, carrying the event and the token it goes to. A token
/// with one waiting takes the newer event instead, so a burst of updates sends the last.
enum LiveActivityDeliveries {
    /// What each of an event's deliveries carries.
    struct Queued {
        let notificationID: Int64
        let appID: Int64
        let content: String
        let expiresAt: Date
        let priority: Int16
    }

    /// A token with a delivery still waiting takes the newer event in it, not a second delivery.
    static let newerEventReplacesWaiting = """
        ON CONFLICT (notification_id, device_id, day) WHERE kind = 'activity' AND state = 'available'
        DO UPDATE SET content = excluded.content, expires_at = excluded.expires_at, priority = excluded.priority,
                      push_token = excluded.push_token, updated_at = now()
        RETURNING 1
        """

    /// The devices that show Live Activities: iPhones on APNs, and iPhones registered through
    /// Firebase (`platform = 'ios'`), whose events FCM passes to APNs.
    static let onIOS = "(d.provider = 'apns' OR (d.provider = 'fcm' AND d.platform = 'ios'))"

    /// The event's content for a device (`event.content`): an iPhone on Firebase is sent to its FCM
    /// token, so the activity's token goes in the content (`LiveActivityPush.token`); a device on APNs
    /// is sent to the activity's token itself (`pushTokenFor`).
    static func contentFor(_ token: String) -> String {
        "CASE WHEN d.provider = 'apns' THEN event.content ELSE jsonb_set(event.content, '{live_activity,token}', to_jsonb(\(token))) END"
    }

    static func pushTokenFor(_ token: String) -> String { "CASE WHEN d.provider = 'apns' THEN \(token) END" }

    /// On an activity's end: a device that will get no end (its start came through push-to-start,
    /// and it never registered the activity's token) must not get a waiting start or update after it.
    static func cancelWaitingWithoutToken(
        notificationID: Int64, appID: Int64, activityID: String, firstDay: Int32, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query(
            """
            UPDATE deliveries q SET state = 'cancelled', cancelled_at = now(), reason = 'the activity ended', updated_at = now()
            WHERE q.notification_id = \(notificationID) AND q.kind = 'activity' AND q.day >= \(firstDay)
              AND q.state IN \(unescaped: DeliveryStateList.waiting)
              AND q.device_id NOT IN (
                  SELECT device_id FROM live_activity_tokens WHERE app_id = \(appID) AND activity_id = \(activityID))
            """,
            logger: logger
        )
    }

    /// Cancels the activity's events still waiting for one device (its token was removed).
    static func cancelWaiting(
        appID: Int64, activityID: String, deviceID: Int64, reason: String, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query(
            """
            UPDATE deliveries q SET state = 'cancelled', cancelled_at = now(), reason = \(reason), updated_at = now()
            FROM live_activities a
            WHERE a.app_id = \(appID) AND a.activity_id = \(activityID) AND q.notification_id = a.notification_id
              AND q.day >= delivery_day(a.created_at) AND q.kind = 'activity' AND q.device_id = \(deviceID)
              AND q.state IN \(unescaped: DeliveryStateList.waiting)
            """,
            logger: logger
        )
    }

    /// A start, to the push-to-start tokens of the targeted devices for the activity's attributes
    /// type; how many devices it goes to.
    static func queueStart(
        _ queued: Queued, attributesType: String, userAliases: [String], deviceIDs: [Int64], on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Int {
        try await connection.query(
            """
            INSERT INTO deliveries (kind, notification_id, app_id, device_id, content, expires_at, priority, run_at, push_token)
            SELECT 'activity', \(queued.notificationID), \(queued.appID), d.id, \(unescaped: Self.contentFor("p.token")), \(queued.expiresAt),
                   \(queued.priority), now(), \(unescaped: Self.pushTokenFor("p.token"))
            FROM devices d JOIN push_to_start_tokens p ON p.device_id = d.id AND p.attributes_type = \(attributesType)
            CROSS JOIN (SELECT \(queued.content)::jsonb AS content) AS event
            WHERE d.app_id = \(queued.appID) AND \(unescaped: Self.onIOS)
              AND (d.user_alias = ANY(\(userAliases)::text[]) OR d.id = ANY(\(deviceIDs)::int8[]))
              AND d.unregistered_at IS NULL AND d.invalidated_at IS NULL AND d.merged_into IS NULL
            ORDER BY d.id
            \(unescaped: Self.newerEventReplacesWaiting)
            """,
            logger: logger
        ).count()
    }

    /// An update or end, to the activity's registered tokens; how many devices it goes to. A token
    /// APNs said is gone (410 or a bad token, `tokenGonePrefix`) ended on its device: it is dropped.
    static func queueEvent(
        _ queued: Queued, activityID: String, firstDay: Int32, tokenGonePrefix: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> Int {
        try await connection.query(
            """
            WITH gone AS (
                DELETE FROM live_activity_tokens t USING deliveries q
                WHERE t.app_id = \(queued.appID) AND t.activity_id = \(activityID)
                  AND q.notification_id = \(queued.notificationID) AND q.kind = 'activity' AND q.device_id = t.device_id AND q.day >= \(firstDay)
                  AND COALESCE(q.push_token, q.content -> 'live_activity' ->> 'token') = t.token AND q.state = 'failed' AND q.reason LIKE \(tokenGonePrefix + "%")
                RETURNING t.device_id
            )
            INSERT INTO deliveries (kind, notification_id, app_id, device_id, content, expires_at, priority, run_at, push_token)
            SELECT 'activity', \(queued.notificationID), \(queued.appID), d.id, \(unescaped: Self.contentFor("t.token")), \(queued.expiresAt),
                   \(queued.priority), now(), \(unescaped: Self.pushTokenFor("t.token"))
            FROM live_activity_tokens t JOIN devices d ON d.id = t.device_id
            CROSS JOIN (SELECT \(queued.content)::jsonb AS content) AS event
            WHERE t.app_id = \(queued.appID) AND t.activity_id = \(activityID) AND \(unescaped: Self.onIOS)
              AND d.unregistered_at IS NULL AND d.invalidated_at IS NULL AND d.merged_into IS NULL
              AND t.device_id NOT IN (SELECT device_id FROM gone)
            ORDER BY d.id
            \(unescaped: Self.newerEventReplacesWaiting)
            """,
            logger: logger
        ).count()
    }
}
