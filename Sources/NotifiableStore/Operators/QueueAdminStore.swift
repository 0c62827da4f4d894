import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Queue depth for operators.
public struct QueueStats: Sendable, Equatable {
    public var counts: [String: Int64] = [:]
    /// Seconds the oldest ready delivery has waited past its run time; 0 when none is ready.
    public var oldestReadyAgeSeconds: Double = 0
    public var fanningOut: Int64 = 0
}

/// The queue as operators use it: its depth, dead deliveries, and putting them back.
public struct QueueAdminStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public func stats() async throws -> QueueStats {
        var stats = QueueStats()
        for try await (state, count) in try await client.query(
            "SELECT state, count(*) FROM deliveries GROUP BY state", logger: logger
        ).decode((String, Int64).self) {
            stats.counts[state] = count
        }
        // The oldest of each app's oldest at each priority: a few index probes per app with
        // deliveries ready, rather than a scan of every waiting delivery.
        for try await age in try await client.query(
            """
            SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(oldest.run_at)), 0)::float8
            FROM ready_apps(0, 9223372036854775807, 2147483647, (SELECT day FROM delivery_queue_floor), delivery_day(now())) AS ready
            CROSS JOIN (VALUES (10::smallint), (5::smallint)) AS level(priority)
            CROSS JOIN LATERAL (
                SELECT q.run_at FROM deliveries q
                WHERE q.app_id = ready.app_id AND q.priority = level.priority AND q.state IN \(unescaped: DeliveryStateList.waiting)
                ORDER BY q.run_at LIMIT 1
            ) AS oldest
            WHERE oldest.run_at <= now()
            """,
            logger: logger
        ).decode(Double.self) {
            stats.oldestReadyAgeSeconds = max(0, age)
        }
        for try await count in try await client.query(
            "SELECT count(*) FROM notifications WHERE state = 'fanning_out'", logger: logger
        ).decode(Int64.self) {
            stats.fanningOut = count
        }
        return stats
    }

    /// Dead deliveries, oldest first, after `afterID`; of one app when given.
    public func dead(appID: Int64?, afterID: Int64?, limit: Int) async throws -> [DeliveryRecord] {
        let rows = try await client.query(
            """
            SELECT \(unescaped: DeliveryRecord.columns)
            FROM deliveries q JOIN devices d ON d.id = q.device_id
            WHERE q.state = 'dead' AND q.id > \(afterID ?? 0) AND (\(appID)::int8 IS NULL OR q.app_id = \(appID)::int8)
            ORDER BY q.id LIMIT \(limit)
            """,
            logger: logger
        )
        var records: [DeliveryRecord] = []
        for try await row in rows { records.append(try DeliveryRecord.decode(row)) }
        return records
    }

    /// Puts dead deliveries back in the queue with a fresh attempt budget: those named, or all
    /// of the notification's, the app's (or everyone's) when none are named. Deliveries to devices that are gone
    /// or invalid stay dead, and so do sync signals: a newer state may have replaced theirs, and
    /// the device catches up from its change feed. Returns how many were re-queued.
    public func requeueDead(appID: Int64?, ids: [Int64]?, notificationID: Int64? = nil) async throws -> Int {
        let count = try await client.withTransaction(logger: logger) { connection in
            let days = try await DeadDeliveries.requeue(appID: appID, ids: ids, notificationID: notificationID, on: connection, logger: logger)
            // Dead deliveries of any age wait again: the queue's floor must not be above them.
            if let oldest = days.min() {
                try await connection.query("SELECT lower_delivery_queue_floor(\(oldest))", logger: logger)
            }
            return days.count
        }
        if count > 0 { await wakeWorkers(client, logger: logger) }
        return count
    }
}
