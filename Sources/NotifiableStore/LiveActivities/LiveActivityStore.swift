import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Live Activities of each app: the tokens devices register for them, and their events queued as
/// pushes. Each activity has one notification; each event queues one `activity` delivery per token,
/// carrying the event's content and the token (`deliveries.push_token`), so the claim sends an
/// activity's pushes to a device in order and cancels one that a newer event supersedes.
public struct LiveActivityStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// How long an event's push may wait: a Live Activity lives at most eight hours.
    public static let pushLifetime: TimeInterval = 8 * 3600

    /// Whether the app has the registered device: asked before a request's body is read, so
    /// another app's caller learns nothing from how its body is judged.
    public func hasDevice(appID: Int64, deviceID: Int64) async throws -> Bool {
        try await client.query(
            "SELECT 1 FROM devices WHERE id = \(deviceID) AND app_id = \(appID) AND unregistered_at IS NULL AND merged_into IS NULL",
            logger: logger
        ).count() > 0
    }

    public enum Registration: Sendable, Equatable {
        case registered
        case noSuchDevice
        /// Live Activities are iOS's: an Android device has no activity token to give. An iPhone
        /// registered through Firebase (`platform: ios`) has, and its events go through FCM.
        case notOnAPNs
    }

    /// Stores the token of `activityID` on the device (replacing an earlier one).
    public func registerToken(
        appID: Int64, deviceID: Int64, activityID: String, token: String, attributesType: String?
    ) async throws -> Registration {
        try await register(appID: appID, deviceID: deviceID) { connection in
            // Waits for an event of the activity being accepted; an ended activity takes no new token
            // (its end was queued to the tokens it had).
            let state = try await connection.query(
                "SELECT state FROM live_activities WHERE app_id = \(appID) AND activity_id = \(activityID) FOR SHARE", logger: logger)
            for try await state in state.decode(String.self) where state == "ended" { throw ActivityEnded(activityID: activityID) }
            try await connection.query(
                """
                INSERT INTO live_activity_tokens (app_id, activity_id, device_id, token, attributes_type)
                VALUES (\(appID), \(activityID), \(deviceID), \(token), \(attributesType))
                ON CONFLICT (app_id, activity_id, device_id) DO UPDATE
                SET token = excluded.token, attributes_type = COALESCE(excluded.attributes_type, live_activity_tokens.attributes_type),
                    updated_at = now()
                """,
                logger: logger
            )
        }
    }

    /// Stores the device's push-to-start token for `attributesType` (iOS 17.2+).
    public func registerPushToStart(appID: Int64, deviceID: Int64, attributesType: String, token: String) async throws -> Registration {
        try await register(appID: appID, deviceID: deviceID) { connection in
            try await connection.query(
                """
                INSERT INTO push_to_start_tokens (device_id, attributes_type, token) VALUES (\(deviceID), \(attributesType), \(token))
                ON CONFLICT (device_id, attributes_type) DO UPDATE SET token = excluded.token, updated_at = now()
                """,
                logger: logger
            )
        }
    }

    /// Removes the device's token of `activityID` (the app stopped showing the activity, or the user
    /// dismissed it), and cancels the activity's event still waiting for it; false when it had none.
    public func removeToken(appID: Int64, deviceID: Int64, activityID: String) async throws -> Bool {
        try await client.withTransaction(logger: logger) { connection in
            // After an event being accepted for the activity, whose pushes are then cancelled too.
            try await Self.lockActivityEvents(appID: appID, activityID: activityID, on: connection, logger: logger)
            let removed = try await connection.query(
                """
                DELETE FROM live_activity_tokens t USING devices d
                WHERE t.app_id = \(appID) AND t.activity_id = \(activityID) AND t.device_id = \(deviceID)
                  AND d.id = t.device_id AND d.app_id = \(appID)
                RETURNING 1
                """,
                logger: logger
            ).count()
            guard removed > 0 else { return false }
            try await LiveActivityDeliveries.cancelWaiting(
                appID: appID, activityID: activityID, deviceID: deviceID, reason: "activity token removed", on: connection, logger: logger)
            return true
        }
    }

    /// Removes the device's push-to-start token for `attributesType`; false when it had none. A
    /// start already queued to it still goes: the backend asked for it before.
    public func removePushToStart(appID: Int64, deviceID: Int64, attributesType: String) async throws -> Bool {
        try await client.query(
            """
            DELETE FROM push_to_start_tokens p USING devices d
            WHERE p.device_id = \(deviceID) AND p.attributes_type = \(attributesType) AND d.id = p.device_id AND d.app_id = \(appID)
            RETURNING 1
            """,
            logger: logger
        ).count() > 0
    }

    private func register(
        appID: Int64, deviceID: Int64, _ write: @Sendable @escaping (PostgresConnection) async throws -> Void
    ) async throws -> Registration {
        try await Self.unwrapped {
            try await client.withTransaction(logger: logger) { connection in
                let rows = try await connection.query(
                    """
                    SELECT provider, platform FROM devices
                    WHERE id = \(deviceID) AND app_id = \(appID) AND unregistered_at IS NULL AND merged_into IS NULL
                    FOR SHARE
                    """,
                    logger: logger
                )
                var found: (provider: String, platform: String?)?
                for try await (provider, platform) in rows.decode((String, String?).self) { found = (provider, platform) }
                guard let found else { return .noSuchDevice }
                guard found.provider == Provider.apns.rawValue || found.platform == DevicePlatform.ios.rawValue else { return .notOnAPNs }
                try await write(connection)
                return .registered
            }
        }
    }

    /// `body`, with the errors this store throws from inside a transaction unwrapped.
    static func unwrapped<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresTransactionError {
            if let ended = error.closureError as? ActivityEnded { throw ended }
            if let started = error.closureError as? ActivityStarted { throw started }
            throw error
        }
    }

    /// What accepting an event did.
    public struct Sent: Sendable, Equatable {
        public let notificationID: Int64
        /// The event's `aps.timestamp`: when it was accepted, never before the activity's last event.
        public let timestamp: Int64
        /// The pushes queued (a device with an earlier event still waiting gets this one instead).
        public let devices: Int
        /// Whether a broadcast to the activity's channel was queued too.
        public let broadcast: Bool
    }

    public struct ActivityEnded: Error, Sendable {
        public let activityID: String
    }

    /// A start names an activity that exists already: starting it again would show a second one.
    public struct ActivityStarted: Error, Sendable {
        public let activityID: String
    }

    /// Queues `request`'s event. Events of one activity are accepted one at a time (its row is
    /// locked), so their timestamps and delivery ids follow the order they were accepted in.
    public func send(appID: Int64, _ request: LiveActivityRequest, now: Date = Date()) async throws -> Sent {
        try await Self.unwrapped { try await queue(appID: appID, request, now: now) }
    }

    private func queue(appID: Int64, _ request: LiveActivityRequest, now: Date) async throws -> Sent {
        let sent = try await client.withTransaction(logger: logger) { connection -> Sent in
            let activity = try await lockActivity(
                appID: appID, activityID: request.activityID, starting: request.push.event == .start, first: request.push, on: connection)
            let (notificationID, lastTimestamp, firstDay) = (activity.notificationID, activity.lastTimestamp, activity.firstDay)
            if request.push.event == .end {
                try await LiveActivityDeliveries.cancelWaitingWithoutToken(
                    notificationID: notificationID, appID: appID, activityID: request.activityID, firstDay: firstDay, on: connection,
                    logger: logger)
            }
            var push = request.push
            push.timestamp = max(Int64(now.timeIntervalSince1970.rounded(.down)), lastTimestamp)
            if push.event == .start, let channelID = activity.openChannelID {
                // Started through push-to-start, the activity listens to the channel (iOS 18).
                push.inputPushChannel = channelID
            }
            let expiresAt = now.addingTimeInterval(Self.pushLifetime)
            var content = NotificationContent(priority: push.priority, expiresAt: expiresAt)
            content.liveActivity = push
            let text = try StoredJSON.text(content)
            let queued = LiveActivityDeliveries.Queued(
                notificationID: notificationID, appID: appID, content: text, expiresAt: expiresAt, priority: push.priority.queueRank)
            let devices: Int
            if push.event == .start {
                devices = try await LiveActivityDeliveries.queueStart(
                    queued, attributesType: push.attributesType ?? "", userAliases: request.targeting.userAliases,
                    deviceIDs: request.targeting.deviceIDs, on: connection, logger: logger)
            } else {
                devices = try await LiveActivityDeliveries.queueEvent(
                    queued, activityID: request.activityID, firstDay: firstDay, tokenGonePrefix: Self.tokenGonePrefix, on: connection,
                    logger: logger)
            }
            var broadcast = false
            if push.event != .start, let channelID = activity.openChannelID {
                // One broadcast reaches every device subscribed to the channel (a start cannot be broadcast).
                try await ActivityBroadcasts.queue(
                    appID: appID, activityID: request.activityID, notificationID: notificationID, channelID: channelID, content: text,
                    expiresAt: expiresAt, on: connection, logger: logger)
                broadcast = true
            }
            if push.event == .end {
                try await ActivityChannels.close(appID: appID, activityID: request.activityID, on: connection, logger: logger)
            }
            try await connection.query(
                """
                UPDATE live_activities SET last_timestamp = \(push.timestamp),
                    state = CASE WHEN \(push.event == .end) THEN 'ended' ELSE state END,
                    ended_at = CASE WHEN \(push.event == .end) THEN now() ELSE ended_at END
                WHERE app_id = \(appID) AND activity_id = \(request.activityID)
                """,
                logger: logger
            )
            if push.event == .end {
                // Its pushes carry their tokens; the ended activity needs them no more.
                try await connection.query(
                    "DELETE FROM live_activity_tokens WHERE app_id = \(appID) AND activity_id = \(request.activityID)", logger: logger)
            }
            return Sent(notificationID: notificationID, timestamp: push.timestamp, devices: devices, broadcast: broadcast)
        }
        if sent.devices > 0 { await wakeWorkers(client, logger: logger) }
        if sent.broadcast { await wakeWorkers(client, logger: logger, for: .channels) }
        return sent
    }

    /// The reason the sender gives a push whose activity token APNs no longer takes.
    public static let tokenGonePrefix = "activity token gone"

    /// Waits for the events of the activity being accepted, and holds the next ones back until
    /// this transaction ends (an advisory lock: the activity may have no row yet).
    static func lockActivityEvents(appID: Int64, activityID: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            "SELECT pg_advisory_xact_lock(hashtextextended(\(String(appID)) || '/' || \(activityID), 0))", logger: logger)
    }

    /// What an event or a channel request finds of its activity, with its row locked.
    struct LockedActivity {
        let notificationID: Int64
        let lastTimestamp: Int64
        let firstDay: Int32
        let channelState: String?
        let channelID: String?

        /// The channel devices may be subscribed to, once Apple made it and while the activity lives.
        var openChannelID: String? { channelState == "open" ? channelID : nil }
    }

    /// The activity's notification, last timestamp, first delivery day and channel, its row locked
    /// for this transaction; made on its first event or channel request (an activity the app
    /// started itself is first heard of in an update). A start names a new activity, or one that
    /// has had no event yet (its channel was asked for first). Two first
    /// requests of one activity wait for each other on an advisory lock, so only one makes it.
    func lockActivity(
        appID: Int64, activityID: String, starting: Bool, first: LiveActivityPush?, on connection: PostgresConnection
    ) async throws -> LockedActivity {
        try await Self.lockActivityEvents(appID: appID, activityID: activityID, on: connection, logger: logger)
        let rows = try await connection.query(
            """
            SELECT notification_id, last_timestamp, state, delivery_day(created_at), channel_state, channel_id FROM live_activities
            WHERE app_id = \(appID) AND activity_id = \(activityID) FOR UPDATE
            """,
            logger: logger
        )
        for try await (notificationID, last, state, day, channelState, channelID) in rows.decode(
            (Int64, Int64, String, Int32, String?, String?).self
        ) {
            guard state == "active" else { throw ActivityEnded(activityID: activityID) }
            // Made by a channel request, it has had no event yet: its start is its first.
            guard !starting || last == 0 else { throw ActivityStarted(activityID: activityID) }
            return LockedActivity(notificationID: notificationID, lastTimestamp: last, firstDay: day, channelState: channelState, channelID: channelID)
        }
        var content = NotificationContent()
        content.liveActivity = first
        let made = try await connection.query(
            """
            WITH made AS (
                INSERT INTO notifications (app_id, content, targeting, state, fanned_out_at)
                VALUES (\(appID), \(try StoredJSON.text(content))::jsonb, \(try StoredJSON.text(Targeting()))::jsonb, 'fanned_out', now())
                RETURNING id
            )
            INSERT INTO live_activities (app_id, activity_id, notification_id) SELECT \(appID), \(activityID), id FROM made
            RETURNING notification_id, delivery_day(created_at)
            """,
            logger: logger
        )
        for try await (notificationID, day) in made.decode((Int64, Int32).self) {
            return LockedActivity(notificationID: notificationID, lastTimestamp: 0, firstDay: day, channelState: nil, channelID: nil)
        }
        throw StoreError(description: "live activity \(activityID) of app \(appID) could not be made")
    }

    /// An activity as the API shows it: its state, its tokens, and its pushes by state (a recount).
    public struct Summary: Sendable, Equatable {
        public let activityID: String
        public let notificationID: Int64
        public let state: String
        public let lastTimestamp: Int64
        public let tokens: Int
        public let deliveries: [String: Int64]
        public let createdAt: Date
        public let endedAt: Date?
        /// Its broadcast channel, when one was asked for, and its broadcasts by state.
        public let channel: ActivityChannel?
        public let broadcasts: [String: Int64]
    }

    /// The activity whose pushes a notification carries (the console's notification page); nil for
    /// any other notification.
    public func summary(appID: Int64, notificationID: Int64) async throws -> Summary? {
        let rows = try await client.query(
            "SELECT activity_id FROM live_activities WHERE app_id = \(appID) AND notification_id = \(notificationID)", logger: logger)
        for try await activityID in rows.decode(String.self) { return try await summary(appID: appID, activityID: activityID) }
        return nil
    }

    public func summary(appID: Int64, activityID: String) async throws -> Summary? {
        let rows = try await client.query(
            """
            SELECT a.notification_id, a.state, a.last_timestamp, a.created_at, a.ended_at,
                   (SELECT count(*) FROM live_activity_tokens t WHERE t.app_id = a.app_id AND t.activity_id = a.activity_id),
                   COALESCE((SELECT jsonb_object_agg(s.state, s.n) FROM (
                       SELECT q.state, count(*) AS n FROM deliveries q
                       WHERE q.notification_id = a.notification_id AND q.kind = 'activity' AND q.day >= delivery_day(a.created_at)
                       GROUP BY q.state) s), '{}')::text,
                   COALESCE((SELECT jsonb_object_agg(s.state, s.n) FROM (
                       SELECT b.state, count(*) AS n FROM activity_broadcasts b
                       WHERE b.app_id = a.app_id AND b.activity_id = a.activity_id GROUP BY b.state) s), '{}')::text,
                   \(unescaped: ActivityChannels.columns)
            FROM live_activities a WHERE a.app_id = \(appID) AND a.activity_id = \(activityID)
            """,
            logger: logger
        )
        for try await (notificationID, state, last, createdAt, endedAt, tokens, counts, broadcasts, channelState, channelID, storage, error)
            in rows.decode((Int64, String, Int64, Date, Date?, Int64, String, String, String?, String?, Bool, String?).self)
        {
            return Summary(
                activityID: activityID, notificationID: notificationID, state: state, lastTimestamp: last, tokens: Int(tokens),
                deliveries: try StoredJSON.decode([String: Int64].self, from: counts), createdAt: createdAt, endedAt: endedAt,
                channel: ActivityChannels.channel((channelState, channelID, storage, error)),
                broadcasts: try StoredJSON.decode([String: Int64].self, from: broadcasts)
            )
        }
        return nil
    }
}
