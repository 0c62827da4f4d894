import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Notifications of each app: creating them (idempotently), reading them with exact counters,
/// listing and cancelling them, and recording the statuses the SDKs report.
public struct NotificationStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    static let columns = """
        n.id, n.app_id, n.content::text, n.targeting::text, n.idempotency_key, n.state,
        n.created_at, n.fanned_out_at, n.cancelled_at,
        n.stateful, n.users_targeted, n.users_read, n.users_dismissed, n.users_activated, n.send_at, n.local_send_at,
        n.rich, n.awaiting_content
        """

    /// An idempotency key the app has used before came with another request body.
    public struct IdempotencyKeyReused: Error, Sendable, CustomStringConvertible {
        public let notificationID: Int64

        public init(notificationID: Int64) { self.notificationID = notificationID }

        public var description: String {
            "This idempotency key already made notification \(notificationID) from a different request; send the same body "
                + "to get it again, or use a new key for a new notification."
        }
    }

    /// Stores a notification for fan-out, with what it left unsaid taken from the app's push
    /// defaults (`NotificationRequest.applying(_:now:)`); a stateful one with its users' copies, in
    /// the same transaction. With an idempotency key the app has used before, returns that notification
    /// instead and `created` is false, or throws `IdempotencyKeyReused` when `digest` (of the
    /// request's body, `NotificationRequest.digest(of:)`) differs from the one it was created with.
    public func create(
        appID: Int64, request: NotificationRequest, digest: [UInt8]? = nil
    ) async throws -> (notification: StoredNotification, created: Bool) {
        let inserted = try await client.withTransaction(logger: logger) { connection -> StoredNotification? in
            let app = try await Self.app(appID, on: connection, logger: logger)
            return try await Self.insert(request, digest: digest, app: app, on: connection, logger: logger)
        }
        if let inserted {
            await wakeWorkers(client, logger: logger)
            return (inserted, true)
        }
        let earlier = try await client.withTransaction(logger: logger) { connection in
            try await Self.earlier(request, digest: digest, appID: appID, on: connection, logger: logger)
        }
        switch earlier {
        case .created(let notification), .replayed(let notification): return (notification, false)
        case .keyReused(let notificationID): throw IdempotencyKeyReused(notificationID: notificationID)
        }
    }

    /// What became of one notification of a batch.
    public enum BatchOutcome: Sendable {
        case created(StoredNotification)
        /// Its idempotency key made this notification before, from the same body.
        case replayed(StoredNotification)
        /// Its idempotency key made this notification before, from another body: nothing was stored.
        case keyReused(notificationID: Int64)
    }

    /// Stores many notifications in one transaction, as `create` stores one: either all that are
    /// stored commit together, or none does. Answers each one's outcome in order; an idempotency
    /// key used twice in the batch makes the second a replay of the first (or `keyReused`).
    public func createBatch(appID: Int64, _ items: [(request: NotificationRequest, digest: [UInt8]?)]) async throws -> [BatchOutcome] {
        guard !items.isEmpty else { return [] }
        let outcomes = try await client.withTransaction(logger: logger) { connection -> [BatchOutcome] in
            let app = try await Self.app(appID, on: connection, logger: logger)
            var outcomes: [BatchOutcome] = []
            outcomes.reserveCapacity(items.count)
            for (request, digest) in items {
                if let inserted = try await Self.insert(request, digest: digest, app: app, on: connection, logger: logger) {
                    outcomes.append(.created(inserted))
                } else {
                    outcomes.append(try await Self.earlier(request, digest: digest, appID: appID, on: connection, logger: logger))
                }
            }
            return outcomes
        }
        if outcomes.contains(where: { if case .created = $0 { true } else { false } }) { await wakeWorkers(client, logger: logger) }
        return outcomes
    }

    private static func app(_ appID: Int64, on connection: PostgresConnection, logger: Logger) async throws -> App {
        guard
            let app = try await AppStore.apps(
                from: connection.query("SELECT \(unescaped: AppStore.columns) FROM apps WHERE id = \(appID)", logger: logger)
            ).first
        else {
            throw StoreError(description: "app \(appID) does not exist")
        }
        return app
    }

    /// Inserts the notification (and a stateful one's copies); nil when its idempotency key was used before.
    private static func insert(
        _ request: NotificationRequest, digest: [UInt8]?, app: App, on connection: PostgresConnection, logger: Logger
    ) async throws -> StoredNotification? {
        let digest = digest.map { Data($0) }
        let targeting = try StoredJSON.text(request.targeting)
        let stateful = request.stateful != nil
        var sendAt: Date?, localSendAt: Date?
        switch request.schedule {
        case .at(let date)?: sendAt = date
        case .localTime(let wallClock)?: localSendAt = wallClock
        case nil: break
        }
        let appID = app.id
        let request = request.applying(app.pushDefaults, now: Date())
        let content = try StoredJSON.text(request.content)
        guard
            var notification = try await Self.first(
                connection.query(
                    """
                    INSERT INTO notifications AS n (
                        app_id, idempotency_key, content, targeting, expires_at, stateful, users_targeted, send_at, local_send_at,
                        rich, awaiting_content, request_digest)
                    VALUES (\(appID), \(request.idempotencyKey), \(content)::jsonb, \(targeting)::jsonb, \(request.content.expiresAt),
                            \(stateful), \(stateful ? request.targeting.userAliases.count : 0), \(sendAt),
                            \(localSendAt)::timestamptz AT TIME ZONE 'UTC', \(request.rich), \(request.rich), \(digest))
                    ON CONFLICT (app_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
                    RETURNING \(unescaped: Self.columns)
                    """,
                    logger: logger
                ))
        else { return nil }
        if let options = request.stateful {
            try await UserNotificationStore.createCopies(
                of: notification.id, appID: appID, for: request.targeting.userAliases, expiresAt: options.expiresAt,
                on: connection, logger: logger
            )
            notification = notification.with(
                userStates: UserStateCounters(
                    targeted: Int64(request.targeting.userAliases.count), read: 0, dismissed: 0, activated: 0
                ))
        }
        return notification
    }

    /// The notification an idempotency key made before, and whether it came with another body (a
    /// notification created before digests were kept matches any body).
    private static func earlier(
        _ request: NotificationRequest, digest: [UInt8]?, appID: Int64, on connection: PostgresConnection, logger: Logger
    ) async throws -> BatchOutcome {
        guard let key = request.idempotencyKey else {
            throw StoreError(description: "notification insert returned no row and the request has no idempotency key")
        }
        let digest = digest.map { Data($0) }
        for try await row in try await connection.query(
            """
            SELECT \(unescaped: Self.columns), COALESCE(n.request_digest <> \(digest)::bytea, false)
            FROM notifications n WHERE n.app_id = \(appID) AND n.idempotency_key = \(key)
            """,
            logger: logger
        ) {
            let existing = try Self.notification(from: row)
            guard let reused = Array(row).last, try !reused.decode(Bool.self) else {
                return .keyReused(notificationID: existing.id)
            }
            return .replayed(existing)
        }
        throw StoreError(description: "notification insert returned no row and no earlier notification has its key")
    }

    public func notification(id: Int64, appID: Int64) async throws -> StoredNotification? {
        try await Self.first(
            client.query(
                "SELECT \(unescaped: Self.columns) FROM notifications n WHERE n.id = \(id) AND n.app_id = \(appID)",
                logger: logger
            ))
    }

    /// The app's notifications, newest first, older than `beforeID` when given.
    public func list(appID: Int64, beforeID: Int64?, limit: Int) async throws -> [StoredNotification] {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.columns) FROM notifications n
            WHERE n.app_id = \(appID) AND n.id < \(beforeID ?? Int64.max)
            ORDER BY n.id DESC LIMIT \(limit)
            """,
            logger: logger
        )
        var notifications: [StoredNotification] = []
        for try await row in rows { notifications.append(try Self.notification(from: row)) }
        return notifications
    }

    public func counters(notificationID: Int64) async throws -> NotificationCounters {
        try await counters(notificationIDs: [notificationID])[notificationID] ?? NotificationCounters()
    }

    /// Counters of several notifications, read from the kept totals (`NotificationCounterStore`).
    public func counters(notificationIDs ids: [Int64]) async throws -> [Int64: NotificationCounters] {
        try await NotificationCounterStore(client: client, logger: logger).counters(notificationIDs: ids)
    }

    /// A notification's deliveries in id order, after `afterID`, optionally in one state and of one kind.
    public func deliveries(notificationID: Int64, state: String?, kind: String? = nil, afterID: Int64?, limit: Int) async throws -> [DeliveryRecord] {
        // Sync signals live in the days they were queued; pushes in their notification's.
        let days = kind == "push" ? try await DeliveryPartitions.pushDays(ofNotifications: [notificationID], on: client, logger: logger) : nil
        // Each state's first deliveries after the cursor come in id order from
        // deliveries_notification_state_idx; the page is the lowest of them. Asked in one range,
        // without the state, PostgreSQL would walk every earlier delivery's id.
        let states = state.map { [$0] } ?? DeliveryState.names
        let rows = try await client.query(
            """
            SELECT \(unescaped: DeliveryRecord.columns)
            FROM unnest(\(states)::text[]) AS s(state)
            CROSS JOIN LATERAL (
                SELECT * FROM deliveries q
                WHERE q.notification_id = \(notificationID) AND q.state = s.state AND q.id > \(afterID ?? 0)
                  AND (\(days)::int4[] IS NULL OR q.day = ANY(\(days)::int4[])) AND (\(kind)::text IS NULL OR q.kind = \(kind)::text)
                ORDER BY q.id LIMIT \(limit)
            ) AS q
            JOIN devices d ON d.id = q.device_id
            ORDER BY q.id LIMIT \(limit)
            """,
            logger: logger
        )
        var records: [DeliveryRecord] = []
        for try await row in rows { records.append(try DeliveryRecord.decode(row)) }
        return records
    }

    /// Cancels what has not been sent: the notification stops fanning out and its waiting
    /// deliveries are cancelled. False when the app has no such notification.
    public func cancel(id: Int64, appID: Int64) async throws -> Bool {
        try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE notifications SET state = 'cancelled', cancelled_at = COALESCE(cancelled_at, now())
                WHERE id = \(id) AND app_id = \(appID)
                RETURNING id
                """,
                logger: logger
            )
            guard try await rows.count() > 0 else { return false }
            try await WaitingDeliveries.cancel(of: .notification(id), reason: "notification cancelled", on: connection, logger: logger)
            // A Live Activity's notification cancelled ends the activity: nothing more goes to it.
            try await connection.query(
                """
                WITH ended AS (
                    UPDATE live_activities SET state = 'ended', ended_at = COALESCE(ended_at, now())
                    WHERE notification_id = \(id) AND app_id = \(appID) RETURNING app_id, activity_id
                )
                DELETE FROM live_activity_tokens t USING ended e WHERE t.app_id = e.app_id AND t.activity_id = e.activity_id
                """,
                logger: logger
            )
            return true
        }
    }

    /// Records that the device reported the notification delivered or opened. Idempotent: the
    /// first report's time stays. Opened implies delivered. With `userAlias`, the device must
    /// belong to that user. Nil when there was no such delivery to that device in the app;
    /// otherwise whether the notification is stateful (its users' copies may change too).
    public func record(
        _ event: DeliveryEvent, notificationID: Int64, deviceID: Int64, appID: Int64, userAlias: String?
    ) async throws -> Bool? {
        let days = try await DeliveryPartitions.pushDays(ofNotifications: [notificationID], on: client, logger: logger)
        return try await ReportedDeliveries.record(
            event, notificationID: notificationID, days: days, deviceID: deviceID, appID: appID, userAlias: userAlias, on: client,
            logger: logger)
    }

    private static func first(_ rows: PostgresRowSequence) async throws -> StoredNotification? {
        for try await row in rows { return try Self.notification(from: row) }
        return nil
    }

    static func notification(from row: PostgresRow) throws -> StoredNotification {
        let (
            id, appID, content, targeting, key, state, createdAt, fannedOutAt, cancelledAt, stateful, users, read, dismissed, activated,
            sendAt, localSendAt, rich, awaitingContent
        ) = try row.decode(
            (Int64, Int64, String, String, String?, String, Date, Date?, Date?, Bool, Int32, Int32, Int32, Int32, Date?, Date?, Bool, Bool).self
        )
        return StoredNotification(
            id: id, appID: appID,
            content: try StoredJSON.decode(NotificationContent.self, from: content),
            targeting: try StoredJSON.decode(Targeting.self, from: targeting),
            idempotencyKey: key,
            state: StoredNotification.State(rawValue: state) ?? .fanningOut,
            createdAt: createdAt, fannedOutAt: fannedOutAt, cancelledAt: cancelledAt,
            userStates: stateful
                ? UserStateCounters(targeted: Int64(users), read: Int64(read), dismissed: Int64(dismissed), activated: Int64(activated))
                : nil,
            schedule: sendAt.map(SendSchedule.at) ?? localSendAt.map(SendSchedule.localTime),
            rich: rich, awaitingContent: awaitingContent
        )
    }
}
