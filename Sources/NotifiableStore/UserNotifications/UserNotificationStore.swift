import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// A user's copy of a stateful notification, with the notification's content.
public struct UserNotificationRecord: Sendable, Equatable {
    public let notificationID: Int64
    public let userAlias: String
    public let readState: ReadState
    public let actionState: UserActionState
    public let expiresAt: Date
    public let createdAt: Date
    public let updatedAt: Date
    public let content: NotificationContent
}

/// A page of a user's change feed.
public struct UserChangesPage: Sendable, Equatable {
    public let changes: [UserNotificationChange]
    /// Where the next read starts: the last change returned, or the cursor read from.
    public let nextCursor: Int64
    public let hasMore: Bool
}

public enum UserChangesError: Error, Equatable {
    /// The changes after the cursor were pruned: the client must read its list afresh.
    case cursorExpired(prunedThrough: Int64)
    /// The cursor is past the user's last change: it is not one this feed gave out.
    case cursorAhead(lastSeq: Int64)
}

/// Users' copies of stateful notifications: their state, the change feed that records every
/// change to it, and the sync signals that carry a change to the user's other devices.
///
/// Every change takes locks in one order — the user's copy, the user's feed, the notification
/// (for its counters) — so concurrent changes queue up and never deadlock.
public struct UserNotificationStore: Sendable {
    let client: Database
    let logger: Logger
    /// How long a sync signal waits for further changes to the same notification, so that a
    /// burst sends one signal.
    let syncDelay: Duration

    /// A change feed keeps changes this long; every copy expires within 30 days, so a client
    /// behind by more has nothing to catch up that its list does not show.
    public static let changeRetention: Duration = .seconds(35 * 24 * 3600)

    public init(client: Database, logger: Logger, syncDelay: Duration = .seconds(1)) {
        self.client = client
        self.logger = logger
        self.syncDelay = syncDelay
    }

    /// Creates each user's copy of a new stateful notification, with a `created` change in each
    /// user's feed, inside the transaction that stores the notification.
    static func createCopies(
        of notificationID: Int64, appID: Int64, for aliases: [String], expiresAt: Date, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query(
            """
            INSERT INTO user_notifications (app_id, notification_id, user_alias, expires_at)
            SELECT \(appID), \(notificationID), alias, \(expiresAt) FROM unnest(\(aliases)::text[]) AS alias
            """,
            logger: logger
        )
        _ = try await UserFeed.append(
            aliases.map {
                UserFeed.Entry(
                    appID: appID, userAlias: $0, notificationID: notificationID, kind: .created, readState: .unread,
                    actionState: .noInteraction, deviceID: nil
                )
            }, on: connection, logger: logger)
    }

    static let columns = """
        u.notification_id, u.user_alias, u.read_state, u.user_action_state, u.expires_at, u.created_at, u.updated_at, n.content::text
        """

    /// The user's live copies, newest first, older than `beforeID` when given.
    public func list(appID: Int64, userAlias: String, readState: ReadState?, beforeID: Int64?, limit: Int) async throws -> [UserNotificationRecord] {
        try await Self.records(
            client.query(
                """
                SELECT \(unescaped: Self.columns)
                FROM user_notifications u JOIN notifications n ON n.id = u.notification_id
                WHERE u.app_id = \(appID) AND u.user_alias = \(userAlias) AND u.expires_at > now()
                  AND u.notification_id < \(beforeID ?? Int64.max)
                  AND (\(readState?.rawValue)::text IS NULL OR u.read_state = \(readState?.rawValue)::text)
                ORDER BY u.notification_id DESC LIMIT \(limit)
                """,
                logger: logger
            ))
    }

    public func record(appID: Int64, userAlias: String, notificationID: Int64) async throws -> UserNotificationRecord? {
        try await Self.records(
            client.query(
                """
                SELECT \(unescaped: Self.columns)
                FROM user_notifications u JOIN notifications n ON n.id = u.notification_id
                WHERE u.app_id = \(appID) AND u.user_alias = \(userAlias) AND u.notification_id = \(notificationID) AND u.expires_at > now()
                """,
                logger: logger
            )
        ).first
    }

    /// Whether the app's device is one of the user's, so it may say it made a change.
    public func isUsersDevice(_ deviceID: Int64, appID: Int64, userAlias: String) async throws -> Bool {
        try await client.query(
            """
            SELECT 1 FROM devices WHERE id = \(deviceID) AND app_id = \(appID) AND user_alias = \(userAlias) AND merged_into IS NULL
            """,
            logger: logger
        ).count() > 0
    }

    /// Sets the user's read and/or action state. A change is recorded in the feed and signalled
    /// to the user's devices other than `deviceID`; setting what is already set changes nothing.
    /// Nil when the user has no such live copy.
    public func update(
        appID: Int64, userAlias: String, notificationID: Int64, readState: ReadState?, actionState: UserActionState?, deviceID: Int64?
    ) async throws -> UserNotificationRecord? {
        let changed = try await client.withTransaction(logger: logger) { connection -> Bool? in
            let current = try await connection.query(
                """
                SELECT read_state, user_action_state, expires_at FROM user_notifications
                WHERE app_id = \(appID) AND user_alias = \(userAlias) AND notification_id = \(notificationID) AND expires_at > now()
                FOR UPDATE
                """,
                logger: logger
            ).decode((String, String, Date).self)
            var found: (ReadState, UserActionState, Date)?
            for try await (read, action, expiresAt) in current {
                found = (ReadState(rawValue: read) ?? .unread, UserActionState(rawValue: action) ?? .noInteraction, expiresAt)
            }
            guard let (oldRead, oldAction, expiresAt) = found else { return nil }
            let newRead = readState ?? oldRead
            let newAction = actionState ?? oldAction
            guard newRead != oldRead || newAction != oldAction else { return false }

            try await connection.query(
                """
                UPDATE user_notifications SET read_state = \(newRead.rawValue), user_action_state = \(newAction.rawValue), updated_at = now()
                WHERE app_id = \(appID) AND user_alias = \(userAlias) AND notification_id = \(notificationID)
                """,
                logger: logger
            )
            try await Self.recordChange(
                .updated, appID: appID, userAlias: userAlias, notificationID: notificationID, from: (oldRead, oldAction),
                to: (newRead, newAction), deviceID: deviceID, expiresAt: expiresAt, syncDelay: syncDelay, on: connection, logger: logger
            )
            return true
        }
        guard let changed else { return nil }
        if changed { await wakeWorkers(client, logger: logger) }
        return try await record(appID: appID, userAlias: userAlias, notificationID: notificationID)
    }

    /// The SDKs report a notification opened on the user's device: for a stateful notification,
    /// the user has read and activated it, and the user's other devices are told. Nothing when
    /// the user has no live copy.
    public func markOpened(notificationID: Int64, deviceID: Int64, appID: Int64, userAlias alias: String) async throws {
        _ = try await update(
            appID: appID, userAlias: alias, notificationID: notificationID, readState: .read, actionState: .activated, deviceID: deviceID
        )
    }

    /// Deletes the user's copy: recorded in the feed and signalled to the user's devices other
    /// than `deviceID`. The notification's counters keep the user's last state. False when the
    /// user has no such live copy.
    public func delete(appID: Int64, userAlias: String, notificationID: Int64, deviceID: Int64?) async throws -> Bool {
        let deleted = try await client.withTransaction(logger: logger) { connection -> Bool in
            let rows = try await connection.query(
                """
                DELETE FROM user_notifications
                WHERE app_id = \(appID) AND user_alias = \(userAlias) AND notification_id = \(notificationID) AND expires_at > now()
                RETURNING read_state, user_action_state, expires_at
                """,
                logger: logger
            ).decode((String, String, Date).self)
            var found: (ReadState, UserActionState, Date)?
            for try await (read, action, expiresAt) in rows {
                found = (ReadState(rawValue: read) ?? .unread, UserActionState(rawValue: action) ?? .noInteraction, expiresAt)
            }
            guard let (read, action, expiresAt) = found else { return false }
            try await Self.recordChange(
                .deleted, appID: appID, userAlias: userAlias, notificationID: notificationID, from: (read, action), to: (read, action),
                deviceID: deviceID, expiresAt: expiresAt, syncDelay: syncDelay, on: connection, logger: logger
            )
            return true
        }
        if deleted { await wakeWorkers(client, logger: logger) }
        return deleted
    }

    /// The feed entry, the notification's counters, and the sync signals of one change.
    private static func recordChange(
        _ kind: UserNotificationChange.Kind, appID: Int64, userAlias: String, notificationID: Int64,
        from old: (ReadState, UserActionState), to new: (ReadState, UserActionState), deviceID: Int64?, expiresAt: Date,
        syncDelay: Duration, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let seqs = try await UserFeed.append(
            [
                UserFeed.Entry(
                    appID: appID, userAlias: userAlias, notificationID: notificationID, kind: kind, readState: new.0,
                    actionState: new.1, deviceID: deviceID
                )
            ], on: connection, logger: logger)
        func delta(_ isSet: ((ReadState, UserActionState)) -> Bool) -> Int { (isSet(new) ? 1 : 0) - (isSet(old) ? 1 : 0) }
        let read = delta { $0.0 == .read }, dismissed = delta { $0.1 == .dismissed }, activated = delta { $0.1 == .activated }
        if read != 0 || dismissed != 0 || activated != 0 {
            try await connection.query(
                """
                UPDATE notifications SET users_read = users_read + \(read), users_dismissed = users_dismissed + \(dismissed),
                                         users_activated = users_activated + \(activated)
                WHERE id = \(notificationID)
                """,
                logger: logger
            )
        }
        let change = UserNotificationChange(
            seq: seqs[0], kind: kind, notificationID: notificationID, readState: new.0, actionState: new.1, deviceID: deviceID, changedAt: Date()
        )
        try await SyncSignals.enqueue(
            change, appID: appID, userAlias: userAlias, excludedDeviceID: deviceID, expiresAt: expiresAt, delay: syncDelay,
            on: connection, logger: logger
        )
    }

    /// The user's changes after `cursor` (0 for all), oldest first. Copies of the user's that
    /// have expired are recorded as expired first, so the page is exact as of now.
    public func changes(appID: Int64, userAlias: String, after cursor: Int64, limit: Int) async throws -> UserChangesPage {
        try await expire(appID: appID, userAlias: userAlias)
        // The feed's bounds and its changes in one statement, so one snapshot: a prune that
        // commits in between cannot remove changes after a bound that was read before it.
        let rows = try await client.query(
            """
            SELECT f.last_seq, f.pruned_through, c.seq, c.kind, c.notification_id, c.read_state, c.user_action_state,
                   c.device_id, c.changed_at
            FROM user_feeds f
            LEFT JOIN LATERAL (
                SELECT * FROM user_notification_changes c
                WHERE c.app_id = f.app_id AND c.user_alias = f.user_alias AND c.seq > \(cursor)
                ORDER BY c.seq LIMIT \(limit + 1)
            ) c ON true
            WHERE f.app_id = \(appID) AND f.user_alias = \(userAlias)
            ORDER BY c.seq
            """,
            logger: logger
        )
        var feed: (last: Int64, pruned: Int64) = (0, 0)
        var changes: [UserNotificationChange] = []
        for try await (last, pruned, seq, kind, notificationID, read, action, deviceID, changedAt) in rows.decode(
            (Int64, Int64, Int64?, String?, Int64?, String?, String?, Int64?, Date?).self
        ) {
            feed = (last, pruned)
            guard let seq, let kind, let notificationID, let read, let action, let changedAt else { continue }
            changes.append(
                UserNotificationChange(
                    seq: seq, kind: .init(rawValue: kind) ?? .updated, notificationID: notificationID,
                    readState: ReadState(rawValue: read) ?? .unread, actionState: UserActionState(rawValue: action) ?? .noInteraction,
                    deviceID: deviceID, changedAt: changedAt
                ))
        }
        guard cursor >= feed.pruned else { throw UserChangesError.cursorExpired(prunedThrough: feed.pruned) }
        guard cursor <= feed.last else { throw UserChangesError.cursorAhead(lastSeq: feed.last) }
        let hasMore = changes.count > limit
        if hasMore { changes.removeLast() }
        return UserChangesPage(changes: changes, nextCursor: changes.last?.seq ?? cursor, hasMore: hasMore)
    }

    /// Removes copies past their expiry — of one user, or of everyone in batches — recording
    /// each as `expired` in its user's feed. Answers how many expired.
    @discardableResult
    public func expire(appID: Int64? = nil, userAlias: String? = nil, batchSize: Int = 1000) async throws -> Int {
        var total = 0
        while true {
            let count = try await client.withTransaction(logger: logger) { connection -> Int in
                let rows = try await connection.query(
                    """
                    WITH due AS (
                        SELECT id FROM user_notifications
                        WHERE expires_at <= now()
                          AND (\(appID)::int8 IS NULL OR (app_id = \(appID)::int8 AND user_alias = \(userAlias)::text))
                        ORDER BY app_id, user_alias, notification_id
                        LIMIT \(batchSize) FOR UPDATE SKIP LOCKED
                    )
                    DELETE FROM user_notifications u USING due WHERE u.id = due.id
                    RETURNING u.app_id, u.user_alias, u.notification_id, u.read_state, u.user_action_state
                    """,
                    logger: logger
                ).decode((Int64, String, Int64, String, String).self)
                var entries: [UserFeed.Entry] = []
                for try await (app, alias, notificationID, read, action) in rows {
                    entries.append(
                        UserFeed.Entry(
                            appID: app, userAlias: alias, notificationID: notificationID, kind: .expired,
                            readState: ReadState(rawValue: read) ?? .unread, actionState: UserActionState(rawValue: action) ?? .noInteraction,
                            deviceID: nil
                        ))
                }
                // One user's expiries enter the feed in notification order.
                entries.sort { ($0.appID, $0.userAlias, $0.notificationID) < ($1.appID, $1.userAlias, $1.notificationID) }
                _ = try await UserFeed.append(entries, on: connection, logger: logger)
                return entries.count
            }
            total += count
            if count < batchSize { return total }
        }
    }

    /// Deletes feed entries older than the retention, remembering per user how far they went,
    /// so that a cursor from before is told to start over instead of silently missing changes.
    @discardableResult
    public func pruneChanges(batchSize: Int = 10_000) async throws -> Int {
        let retention = Double(Self.changeRetention.components.seconds)
        return try await client.withTransaction(logger: logger) { connection -> Int in
            // The feeds first, in (app, alias) order as every writer takes them, so that pruning
            // never deadlocks with a write to several users' feeds.
            try await connection.query(
                """
                SELECT 1 FROM user_feeds f
                WHERE (f.app_id, f.user_alias) IN (
                    SELECT app_id, user_alias FROM user_notification_changes
                    WHERE changed_at < now() - make_interval(secs => \(retention)))
                ORDER BY f.app_id, f.user_alias
                FOR UPDATE
                """,
                logger: logger
            )
            let rows = try await connection.query(
                """
                WITH gone AS (
                    DELETE FROM user_notification_changes c
                    USING (SELECT app_id, user_alias, seq FROM user_notification_changes
                           WHERE changed_at < now() - make_interval(secs => \(retention))
                           ORDER BY app_id, user_alias, seq LIMIT \(batchSize)) AS old
                    WHERE c.app_id = old.app_id AND c.user_alias = old.user_alias AND c.seq = old.seq
                    RETURNING c.app_id, c.user_alias, c.seq
                ),
                reach AS (
                    SELECT app_id, user_alias, max(seq) AS seq, count(*) AS pruned FROM gone GROUP BY app_id, user_alias
                ),
                marked AS (
                    UPDATE user_feeds f SET pruned_through = GREATEST(f.pruned_through, reach.seq)
                    FROM reach WHERE f.app_id = reach.app_id AND f.user_alias = reach.user_alias
                )
                SELECT COALESCE(sum(pruned), 0)::int8 FROM reach
                """,
                logger: logger
            ).decode(Int64.self)
            var pruned: Int64 = 0
            for try await count in rows { pruned = count }
            return Int(pruned)
        }
    }

    private static func records(_ rows: PostgresRowSequence) async throws -> [UserNotificationRecord] {
        var records: [UserNotificationRecord] = []
        for try await (notificationID, alias, read, action, expiresAt, createdAt, updatedAt, content) in rows.decode(
            (Int64, String, String, String, Date, Date, Date, String).self
        ) {
            records.append(
                UserNotificationRecord(
                    notificationID: notificationID, userAlias: alias, readState: ReadState(rawValue: read) ?? .unread,
                    actionState: UserActionState(rawValue: action) ?? .noInteraction, expiresAt: expiresAt, createdAt: createdAt,
                    updatedAt: updatedAt, content: try StoredJSON.decode(NotificationContent.self, from: content)
                ))
        }
        return records
    }
}
