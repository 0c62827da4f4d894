import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// What one retention pass removed, and how long its longest lock on a table the service
/// writes was held.
public struct RetentionReport: Sendable, Equatable {
    /// Partitions of deliveries detached and dropped, oldest first.
    public var droppedPartitions: [String] = []
    /// Settled deliveries of apps that keep fewer days than the service, removed row by row.
    public var deletedDeliveries = 0
    public var deletedNotifications = 0
    public var deletedSandboxPushes = 0
    public var purgedDevices = 0
    /// History of devices that stay, older than the period.
    public var deletedDeviceEvents = 0
    /// Webhook events that never left, older than the period.
    public var deletedWebhookEvents = 0
    /// Live Activity and push-to-start tokens not renewed within the period.
    public var deletedActivityTokens = 0
    /// The longest a statement of the pass waited for and held a lock that stops the service's
    /// reads or writes of a table (dropping a detached day's foreign keys locks the tables they
    /// point to), an attempt that gave up included.
    public var longestLock: Duration = .zero

    public init() {}
}

/// Removes what is older than the retention period, without long locks and without bloat:
/// deliveries by whole day partitions (detached, then dropped), then in small batches the
/// notifications whose deliveries are all gone, the sandbox's recorded pushes, devices
/// unregistered, invalidated, merged away or erased that long ago, the history of devices that
/// stay, webhook events that never left, and Live Activity tokens not renewed.
/// docs/operations.md's data inventory lists every table that names a person and what removes it.
///
/// An app may keep fewer days (`apps.retention_days`), never more: days are dropped for every
/// app at once. Such an app's settled deliveries older than its period are deleted in batches,
/// and its notifications, sandbox pushes and gone devices go by its own cutoff.
///
/// It never removes what a live feature still promises: a partition holding a delivery that may
/// still be sent (waiting or in flight) stays, whatever its age; a notification stays
/// while a user's stateful copy of it has not expired, while it has a delivery left, and while
/// its fan-out has not finished (a scheduled send); a device stays while it has a delivery left
/// or another device was merged into it. Webhook batches and users' change feeds keep their own,
/// shorter periods (`WebhookWorkerConfiguration.retention`, `UserNotificationStore`).
public struct RetentionStore: Sendable {
    let client: Database
    /// Where the days are dropped: a connection that keeps its session for the whole pass (its
    /// advisory lock and lock_timeout), which a pooler in transaction mode does not give.
    let sessions: Database
    let logger: Logger
    /// Rows removed per statement: each batch is a short transaction.
    let batchSize: Int
    /// How long dropping a day waits for each lock it needs on a table the service uses.
    let lockTimeout: Duration

    public init(
        client: Database, sessions: Database? = nil, logger: Logger, batchSize: Int = 1000, lockTimeout: Duration = .milliseconds(200)
    ) {
        self.client = client
        self.sessions = sessions ?? client
        self.logger = logger
        self.batchSize = batchSize
        self.lockTimeout = lockTimeout
    }

    /// One pass, keeping `days` days. `now` moves the clock (a drill, the steady-state benchmark);
    /// nil is the database's own.
    public func run(keepingDays days: Int, now: Date? = nil) async throws -> RetentionReport {
        let cutoff = try await cutoff(keepingDays: days, now: now)
        var report = try await sessions.withConnection { connection in
            try await dropPastDays(before: cutoff, on: connection)
        }
        let shorter = try await appsKeepingFewer(than: days, now: now)
        for scope in shorter {
            report.deletedDeliveries += try await deleteSettledDeliveries(scope)
        }
        for scope in [RetentionScope(appID: nil, cutoff: cutoff.time)] + shorter {
            report.deletedNotifications += try await repeatBatches { try await deleteNotifications(scope) }
            report.deletedSandboxPushes += try await repeatBatches { try await deleteSandboxPushes(scope) }
            report.purgedDevices += try await repeatBatches { try await purgeDevices(scope) }
            report.deletedDeviceEvents += try await repeatBatches { try await deleteDeviceHistory(scope) }
            report.deletedWebhookEvents += try await repeatBatches { try await deleteUnsentWebhookEvents(scope) }
            report.deletedActivityTokens += try await repeatBatches { try await deleteStaleActivityTokens(scope) }
        }
        // Trends are kept as long as the deliveries they sum up.
        try await TrendStore(client: client, logger: logger).prune(before: cutoff.time)
        return report
    }

    /// The moment before which data goes, and its day as `delivery_day()` counts it.
    private func cutoff(keepingDays days: Int, now: Date?) async throws -> (time: Date, day: Int32) {
        let rows = try await client.query(
            """
            SELECT cutoff, delivery_day(cutoff)
            FROM (SELECT COALESCE(\(now)::timestamptz, now()) - make_interval(days => \(Int32(clamping: days)))) AS c(cutoff)
            """,
            logger: logger
        )
        for try await cutoff in rows.decode((Date, Int32).self) { return cutoff }
        throw RetentionError.noAnswer
    }

    /// Days go one pass at a time (an advisory lock held by this connection: workers' hourly
    /// passes start together), and every statement of theirs that locks a table the service uses
    /// waits at most `lockTimeout` for it, then tries again a few times. A day that
    /// cannot go now is logged and left for the next pass; the others go on.
    private func dropPastDays(before cutoff: (time: Date, day: Int32), on connection: PostgresConnection) async throws -> RetentionReport {
        var report = RetentionReport()
        guard try await Self.boolean("SELECT pg_try_advisory_lock(hashtext('deliveries retention'))", on: connection, logger: logger) else {
            logger.info("another retention pass is dropping days; this one leaves them to it")
            return report
        }
        try await connection.query(PostgresQuery(unsafeSQL: "SET lock_timeout = '\(Int64(lockTimeout.seconds * 1000))ms'"), logger: logger)
        do {
            try await finishLeftovers(on: connection, &report)
            for partition in try await DeliveryPartitions.list(on: client, logger: logger) where partition.endDay <= cutoff.day {
                do {
                    guard try await isPast(partition, cutoff: cutoff.time), try await !hasWork(partition.name, on: connection) else { continue }
                    try await drop(partition, on: connection, &report)
                } catch {
                    logger.warning(
                        "retention could not drop a day now; the next pass tries again",
                        metadata: ["partition": "\(partition.name)", "error": "\(databaseErrorText(error))"])
                }
            }
        } catch {
            try? await release(connection)
            throw error
        }
        try await release(connection)
        return report
    }

    private func release(_ connection: PostgresConnection) async throws {
        try await connection.query("RESET lock_timeout", logger: logger)
        try await connection.query("SELECT pg_advisory_unlock(hashtext('deliveries retention'))", logger: logger)
    }

    /// A day partition is past once its last day is; the legacy partition (the deliveries made
    /// before partitioning, all as day 0) once its newest delivery is.
    private func isPast(_ partition: DeliveryPartition, cutoff: Date) async throws -> Bool {
        guard partition.isLegacy else { return true }
        let rows = try await client.query(
            "SELECT created_at FROM deliveries_legacy ORDER BY id DESC LIMIT 1", logger: logger
        )
        for try await newest in rows.decode(Date.self) { return newest < cutoff }
        return true
    }

    /// Whether a day's table holds a delivery still to be sent: waiting, or in flight (it may be
    /// retried). Each is a probe of one of its partial indexes.
    private func hasWork(_ name: String, on connection: PostgresConnection) async throws -> Bool {
        let table = try Self.identifier(name)
        return try await Self.boolean(
            PostgresQuery(
                unsafeSQL: """
                    SELECT EXISTS (SELECT 1 FROM \(table) WHERE state IN \(DeliveryStateList.waiting))
                        OR EXISTS (SELECT 1 FROM \(table) WHERE state = 'running')
                    """),
            on: connection, logger: logger)
    }

    /// Detaching concurrently lets the queue go on meanwhile: it takes no lock that stops reads or
    /// writes of deliveries (its end does take a brief share lock on the tables the day's foreign
    /// keys point to, under the lock timeout).
    ///
    /// Work that reached the day between the check and the detach (dead deliveries re-queued, a
    /// notification fanned out weeks late) is seen once it is detached, when nothing can reach it
    /// any more: then it is attached again instead of dropped.
    private func drop(_ partition: DeliveryPartition, on connection: PostgresConnection, _ report: inout RetentionReport) async throws {
        let name = try Self.identifier(partition.name)
        try await withShortLocks(&report) {
            // A detach that gave up waiting in its second step has left the day pending: finish it.
            let pending = try await Self.boolean(
                "SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = \(partition.name)::regclass", on: connection, logger: logger)
            let detach = pending ? "FINALIZE" : "CONCURRENTLY"
            try await connection.query(PostgresQuery(unsafeSQL: "ALTER TABLE deliveries DETACH PARTITION \(name) \(detach)"), logger: logger)
        }
        try await dropOrKeep(partition.name, bounds: partition, on: connection, &report)
    }

    /// A detached day: dropped when nothing in it waits, attached again otherwise.
    private func dropOrKeep(_ name: String, bounds: DeliveryPartition?, on connection: PostgresConnection, _ report: inout RetentionReport) async throws {
        let table = try Self.identifier(name)
        if try await hasWork(name, on: connection) {
            let day = bounds?.firstDay ?? DeliveryPartitions.day(ofPartitionNamed: name)
            let range = day.map { "FROM (\($0)) TO (\($0 + 1))" } ?? "FROM (MINVALUE) TO (1)"
            // With the floor lowered in the same transaction: maintenance may have raised it past
            // this day while it was detached.
            try await withShortLocks(&report) {
                try await connection.query("BEGIN", logger: logger)
                do {
                    try await connection.query(PostgresQuery(unsafeSQL: "ALTER TABLE deliveries ATTACH PARTITION \(table) FOR VALUES \(range)"), logger: logger)
                    try await connection.query("SELECT lower_delivery_queue_floor(\(day ?? 0))", logger: logger)
                    try await connection.query("COMMIT", logger: logger)
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
            logger.warning("retention kept a day of deliveries that received work while it was detached", metadata: ["partition": "\(name)"])
            return
        }
        try await dropDetached(name, on: connection, &report)
        report.droppedPartitions.append(name)
        logger.info("retention dropped a day of deliveries", metadata: ["partition": "\(name)"])
    }

    /// Drops a detached day. Its foreign keys go first, one statement each: removing one takes an
    /// exclusive lock on the table it points to (apps, devices, notifications), because the key's
    /// triggers live there, and one lock per statement cannot deadlock with the service. Dropping
    /// the whole table at once took all three in one statement, and deadlocked with a fan-out.
    private func dropDetached(_ name: String, on connection: PostgresConnection, _ report: inout RetentionReport) async throws {
        let table = try Self.identifier(name)
        var keys: [String] = []
        for try await key in try await connection.query(
            "SELECT conname::text FROM pg_constraint WHERE conrelid = \(name)::regclass AND contype = 'f' ORDER BY conname",
            logger: logger
        ).decode(String.self) {
            keys.append(key)
        }
        for key in keys {
            let constraint = try Self.identifier(key, prefix: "deliveries")
            try await withShortLocks(&report) {
                try await connection.query(PostgresQuery(unsafeSQL: "ALTER TABLE \(table) DROP CONSTRAINT \(constraint)"), logger: logger)
            }
        }
        try await withShortLocks(&report) {
            try await connection.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"), logger: logger)
        }
    }

    /// Runs `statement` (under the connection's lock timeout) up to five times while it gives up
    /// waiting for a lock, half a second apart and doubling: what holds the lock is usually brief,
    /// or autovacuum on one of those tables, which a wait shorter than `deadlock_timeout` does not
    /// cancel. The time each attempt took, waiting included, counts towards the longest lock.
    private func withShortLocks(_ report: inout RetentionReport, _ statement: () async throws -> Void) async throws {
        let clock = ContinuousClock()
        var pause = Duration.milliseconds(500)
        for attempt in 1... {
            let started = clock.now
            do {
                try await statement()
                report.longestLock = max(report.longestLock, clock.now - started)
                return
            } catch {
                report.longestLock = max(report.longestLock, clock.now - started)
                guard attempt < 5, (error as? PSQLError)?.serverInfo?[.sqlState] == "55P03" else { throw error }
                try await Task.sleep(for: pause)
                pause *= 2
            }
        }
    }

    /// Finishes what an interrupted pass left: a detach left pending, or a day detached but neither
    /// dropped nor attached again.
    private func finishLeftovers(on connection: PostgresConnection, _ report: inout RetentionReport) async throws {
        var pending: [String] = []
        for try await name in try await connection.query(
            """
            SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'deliveries'::regclass AND i.inhdetachpending
            """,
            logger: logger
        ).decode(String.self) {
            pending.append(name)
        }
        for name in pending {
            let table = try Self.identifier(name)
            try await withShortLocks(&report) {
                try await connection.query(PostgresQuery(unsafeSQL: "ALTER TABLE deliveries DETACH PARTITION \(table) FINALIZE"), logger: logger)
            }
        }
        var detached: [String] = []
        for try await name in try await connection.query(
            """
            SELECT relname::text FROM pg_class
            WHERE relkind = 'r' AND NOT relispartition AND relnamespace = 'public'::regnamespace
              AND (relname = 'deliveries_legacy' OR relname ~ '^deliveries_[0-9]{4}_[0-9]{2}_[0-9]{2}$')
            """,
            logger: logger
        ).decode(String.self) {
            detached.append(name)
        }
        for name in detached {
            try await dropOrKeep(name, bounds: nil, on: connection, &report)
        }
    }

    private static func boolean(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        for try await value in try await connection.query(query, logger: logger).decode(Bool.self) { return value }
        return false
    }

    /// The partitions' names are the service's own; checked anyway before they go into DDL.
    private static func identifier(_ name: String, prefix: String = "deliveries_") throws -> String {
        guard name.hasPrefix(prefix), name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else {
            throw RetentionError.unexpectedPartition(name)
        }
        return "\"\(name)\""
    }
}

public enum RetentionError: Error, CustomStringConvertible {
    case noAnswer
    case unexpectedPartition(String)

    public var description: String {
        switch self {
        case .noAnswer: "the database did not answer the retention cutoff"
        case .unexpectedPartition(let name): "deliveries has a partition named \(name), which retention does not manage; detach it by hand"
        }
    }
}
