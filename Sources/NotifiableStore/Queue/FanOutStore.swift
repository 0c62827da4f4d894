import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// A notification a fan-out worker holds, and how far its fan-out has come.
public struct FanOutJob: Sendable {
    public let notificationID: Int64
    public let appID: Int64
    public let targeting: Targeting
    /// Copied to each delivery: within an app, workers claim `high` before `normal`.
    public let priority: NotificationPriority
    /// The day (since 1970, UTC) of every delivery this notification gets: the partition its
    /// deliveries live in, so that the unique (notification, device) key holds within it.
    public let day: Int32
    public var cursor: Int64
    /// For a notification sent at a wall-clock time in each device's time zone: that time,
    /// held as if it were UTC.
    public var localSendAt: Date? = nil
    /// `"badge": "+N"`: each reached device's badge goes up by N at fan-out.
    public var badgeIncrement: Int32? = nil
    /// The time zone names PostgreSQL knows, read once per fan-out of a local-time notification
    /// (reading `pg_timezone_names` costs tens of milliseconds, too much for every batch).
    var timeZones: [String] = []
    /// How many ids past the cursor the next batch may look; see `FanOutStore.advance`.
    public var window: Int64 = FanOutStore.initialWindow
}

/// Creates deliveries for a notification's audience, one committed batch at a time, walking
/// the app's devices in id order from a cursor kept on the notification. Memory stays
/// constant for any audience, a worker that dies mid-way is replaced after its lease, and the
/// unique (notification, device) constraint makes a repeated batch harmless.
///
/// Each batch looks no further than a window of ids past the cursor. Without that bound, a rare
/// audience (a tag on 1 % of the devices) made PostgreSQL walk the id index and filter a
/// hundred thousand rows per batch, or fetch the whole audience through an index and sort it,
/// every batch; within a window it can intersect the audience's index with the id range and
/// fetch only the window's matches. A window that fills the batch moves the cursor to the
/// batch's last id; one that does not moves the cursor to its end, and doubles when it found
/// less than half a batch, so a sparse audience is crossed in a few batches while the window
/// stays small enough that the planner expects to read all of it, not to stop early on an id
/// walk (docs/performance.md, Tags).
public struct FanOutStore: Sendable {
    let client: Database
    let logger: Logger

    /// The first window of a fan-out, in ids.
    public static let initialWindow: Int64 = 65_536
    static let largestWindow: Int64 = 1 << 40

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Takes a notification waiting for fan-out that no live worker holds, in the order they
    /// became ready for a turn: accepted (or released), or their last turn ended (see `endTurn`).
    /// A notification accepted during another's turn therefore goes before it, and one whose turn
    /// has ended waits only for those that came before that.
    ///
    /// When it is `previous` again, where that left off (nobody else was waiting), the job keeps
    /// what the last turn learned: its window and the time zones.
    public func claim(lease: Duration, after previous: FanOutJob? = nil) async throws -> FanOutJob? {
        let rows = try await client.query(
            """
            UPDATE notifications SET fanout_locked_until = now() + make_interval(secs => \(lease.wholeSecondsAtLeastOne))
            WHERE id = (
                SELECT id FROM notifications
                WHERE state = 'fanning_out' AND (fanout_locked_until IS NULL OR fanout_locked_until < now())
                  AND (fanout_after IS NULL OR fanout_after <= now()) AND NOT awaiting_content
                ORDER BY COALESCE(fanout_locked_until, created_at), id LIMIT 1
                FOR UPDATE SKIP LOCKED
            )
            RETURNING id, app_id, targeting::text, content ->> 'priority', fanout_cursor, local_send_at,
                      delivery_day(COALESCE(fanout_after, created_at)), (content ->> 'badge_increment')::int4
            """,
            logger: logger
        )
        var claimed: FanOutJob?
        for try await (id, appID, targeting, priority, cursor, localSendAt, day, badgeIncrement) in rows.decode(
            (Int64, Int64, String, String?, Int64, Date?, Int32, Int32?).self
        ) {
            claimed = FanOutJob(
                notificationID: id, appID: appID, targeting: try StoredJSON.decode(Targeting.self, from: targeting),
                // Content stored before priorities existed has none: the default, as NotificationContent decodes it.
                priority: priority.flatMap(NotificationPriority.init(rawValue:)) ?? .high, day: day, cursor: cursor,
                localSendAt: localSendAt, badgeIncrement: badgeIncrement
            )
        }
        if let day = claimed?.day {
            // Today's partition exists ahead of time; a notification of another day (fanned out
            // late, or scheduled) may be the first to need its own.
            try await DeliveryPartitions.create(day: day, on: client, logger: logger)
        }
        if let previous, claimed?.notificationID == previous.notificationID, claimed?.cursor == previous.cursor {
            claimed?.window = previous.window
            claimed?.timeZones = previous.timeZones
        } else if claimed?.localSendAt != nil {
            for try await name in try await client.query("SELECT name FROM pg_timezone_names", logger: logger).decode(String.self) {
                claimed?.timeZones.append(name)
            }
        }
        return claimed
    }

    /// The badge a new delivery carries: the device's kept badge raised by the notification's step
    /// (within `NotificationRequest.badgeRange`, the API's), or none.
    private func badgeSQL(_ increment: String?) -> String {
        increment.map { "LEAST(batch.badge + \($0), \(NotificationRequest.badgeRange.upperBound))" } ?? "NULL::int4"
    }

    /// Creates the next batch of deliveries and advances the cursor, in one transaction.
    /// Returns how many deliveries it created, or nil when the fan-out is over (finished, or the
    /// notification was cancelled or taken over).
    public func advance(_ job: inout FanOutJob, batchSize: Int, lease: Duration) async throws -> Int? {
        var builder = SQLBuilder()
        let notificationID = builder.bind(job.notificationID)
        let appID = builder.bind(job.appID)
        let cursor = builder.bind(job.cursor)
        let (sum, overflow) = job.cursor.addingReportingOverflow(job.window)
        let windowEnd = overflow ? Int64.max : sum
        let end = builder.bind(windowEnd)
        let limit = builder.bind(Int64(batchSize))
        let priority = builder.bind(job.priority.queueRank)
        let day = builder.bind(job.day)
        let deliveryDay = job.day
        builder.append(
            """
            WITH batch AS (
                SELECT d.id, COALESCE(d.platform_properties ->> 'time_zone', d.custom_properties ->> 'time_zone') AS time_zone,
                       d.badge
                FROM devices d
                WHERE d.app_id = \(appID) AND d.id > \(cursor) AND d.id <= \(end)
                  AND d.unregistered_at IS NULL AND d.invalidated_at IS NULL AND d.merged_into IS NULL
                  AND 
            """)
        TargetingSQL.appendCondition(for: job.targeting, to: &builder)
        builder.append(
            """

                ORDER BY d.id LIMIT \(limit)
            """)
        // Counting badges up reads each device's badge under a lock, so that two notifications
        // fanning out to it at once give it two different numbers.
        let badgeIncrement = job.badgeIncrement.map { builder.bind($0) }
        // NO KEY: foreign keys' checks (new deliveries, tokens) need not wait for it.
        if badgeIncrement != nil { builder.append("\n    FOR NO KEY UPDATE OF d") }
        builder.append(
            """

            ),
            created AS (
                INSERT INTO deliveries (id, day, notification_id, app_id, device_id, priority, run_at, badge)

            """)
        if let localSendAt = job.localSendAt {
            // Due when the wall-clock time comes in the device's own zone (UTC for none or an
            // unknown one, on which AT TIME ZONE would fail); at once where it has passed already.
            let wallClock = builder.bind(localSendAt)
            builder.append(
                """
                    SELECT next_delivery_id(\(day)), \(day), \(notificationID), \(appID), batch.id, \(priority),
                           GREATEST(now(), (\(wallClock)::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE COALESCE(zone.name, 'UTC')),
                           \(badgeSQL(badgeIncrement))
                    FROM batch LEFT JOIN unnest(\(builder.bind(job.timeZones))::text[]) AS zone(name) ON zone.name = batch.time_zone

                """)
        } else {
            builder.append(
                "        SELECT next_delivery_id(\(day)), \(day), \(notificationID), \(appID), id, \(priority), now(), \(badgeSQL(badgeIncrement)) FROM batch\n"
            )
        }
        builder.append(
            """
                ON CONFLICT (notification_id, device_id, day) WHERE kind = 'push' DO NOTHING
                RETURNING device_id, badge
            ),
            counted AS (
                UPDATE devices SET badge = created.badge FROM created WHERE devices.id = created.device_id AND created.badge IS NOT NULL
            )
            SELECT (SELECT max(id) FROM batch), (SELECT count(*) FROM batch), (SELECT count(*) FROM created),
                   (SELECT max(id) FROM devices WHERE app_id = \(appID))
            """)
        let query = builder.query
        let currentCursor = job.cursor
        let notification = job.notificationID
        let outcome: (next: Int64, created: Int, done: Bool, scanned: Int64)? = try await client.withTransaction(logger: logger) { connection in
            // Hold the notification row for the batch: a cancel waits, and a batch never runs
            // for a notification that is no longer fanning out.
            let held = try await connection.query(
                """
                SELECT fanout_cursor FROM notifications
                WHERE id = \(notification) AND state = 'fanning_out' FOR UPDATE
                """,
                logger: logger
            )
            var storedCursor: Int64?
            for try await value in held.decode(Int64.self) { storedCursor = value }
            guard storedCursor == currentCursor else { return nil }
            // Deliveries of a day before today must not be left below the queue's floor.
            try await connection.query("SELECT lower_delivery_queue_floor(\(deliveryDay))", logger: logger)

            var result: (Int64?, Int64, Int64, Int64?) = (nil, 0, 0, nil)
            for try await row in try await connection.query(query, logger: logger).decode((Int64?, Int64, Int64, Int64?).self) {
                result = row
            }
            let (maxID, scanned, created, lastDevice) = result
            let full = scanned >= Int64(batchSize)
            // A short batch has seen the whole window; it is the last one once the window
            // reaches the app's newest device.
            let next = full ? maxID ?? currentCursor : windowEnd
            let done = !full && windowEnd >= (lastDevice ?? 0)
            try await connection.query(
                """
                UPDATE notifications SET
                    fanout_cursor = \(next),
                    fanout_locked_until = now() + make_interval(secs => \(lease.wholeSecondsAtLeastOne)),
                    state = CASE WHEN \(done) THEN 'fanned_out' ELSE state END,
                    fanned_out_at = CASE WHEN \(done) THEN now() ELSE fanned_out_at END
                WHERE id = \(notification)
                """,
                logger: logger
            )
            return (next, Int(created), done, scanned)
        }
        guard let outcome else { return nil }
        job.cursor = outcome.next
        if outcome.scanned < Int64(batchSize) / 2 { job.window = min(job.window * 2, Self.largestWindow) }
        if outcome.created > 0 {
            await wakeWorkers(client, logger: logger)
        }
        return outcome.done && outcome.created == 0 ? nil : outcome.created
    }
}

extension FanOutStore {
    /// Gives up a held fan-out at the end of its turn, so that notifications accepted meanwhile
    /// are fanned out before it goes on: one app's broadcast of a million devices does not hold
    /// another app's push for the twenty seconds its fan-out takes. It goes behind the others
    /// waiting, and is claimed again when they have had their turn.
    public func endTurn(_ job: FanOutJob) async throws {
        try await client.query(
            """
            UPDATE notifications SET fanout_locked_until = now()
            WHERE id = \(job.notificationID) AND state = 'fanning_out'
            """,
            logger: logger
        )
    }

    /// Gives up a held fan-out before its lease ends (the worker is stopping, or failed), so
    /// another worker can carry on from the cursor at once.
    public func release(_ job: FanOutJob) async throws {
        try await client.query(
            """
            UPDATE notifications SET fanout_locked_until = NULL
            WHERE id = \(job.notificationID) AND state = 'fanning_out'
            """,
            logger: logger
        )
    }
}

extension Duration {
    /// Whole seconds, at least 1: fan-out leases are coarse.
    var wholeSecondsAtLeastOne: Int64 { max(1, components.seconds) }
}
