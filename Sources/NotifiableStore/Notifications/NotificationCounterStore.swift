import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// A notification's delivery counters, kept by the deliveries table's triggers (migration 0014):
/// every statement on deliveries appends what it changed to `notification_counter_changes`, the
/// queue's maintenance folds those rows into `notification_counters`, and a read adds the two.
/// Reading costs the same for 1 delivery or 1,000,000, and is exact whenever it happens.
public struct NotificationCounterStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The counters of each notification in `ids` (zeros for one without deliveries), with its
    /// latest error, in two statements whatever the number of notifications or deliveries.
    public func counters(notificationIDs ids: [Int64]) async throws -> [Int64: NotificationCounters] {
        var all: [Int64: NotificationCounters] = [:]
        for id in ids { all[id] = NotificationCounters() }
        // One statement, so the folded totals and the changes not folded yet come from one snapshot.
        let rows = try await client.query(
            """
            SELECT notification_id, sum(pending)::int8, sum(retrying)::int8, sum(sent)::int8, sum(failed)::int8,
                   sum(dead)::int8, sum(cancelled)::int8, sum(delivered)::int8, sum(opened)::int8
            FROM (
                SELECT notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened
                FROM notification_counters WHERE notification_id = ANY(\(ids)::int8[])
                UNION ALL
                SELECT notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened
                FROM notification_counter_changes WHERE notification_id = ANY(\(ids)::int8[])
            ) AS counts
            GROUP BY notification_id
            """,
            logger: logger
        )
        for try await (id, pending, retrying, sent, failed, dead, cancelled, delivered, opened) in rows.decode(
            (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64).self
        ) {
            var counters = NotificationCounters()
            counters.pending = pending
            counters.retrying = retrying
            counters.sent = sent
            counters.failed = failed
            counters.dead = dead
            counters.cancelled = cancelled
            counters.delivered = delivered
            counters.opened = opened
            counters.targeted = pending + retrying + sent + failed + dead + cancelled
            all[id] = counters
        }
        // The newest failed delivery of each: one step down deliveries_latest_error_idx per notification.
        let lastErrors = try await client.query(
            """
            SELECT n.id, e.reason FROM unnest(\(ids)::int8[]) AS n (id)
            CROSS JOIN LATERAL (
                SELECT reason FROM deliveries
                WHERE notification_id = n.id AND kind = 'push' AND reason IS NOT NULL AND state IN ('retrying', 'failed', 'dead')
                ORDER BY updated_at DESC LIMIT 1
            ) AS e
            """,
            logger: logger
        )
        for try await (id, reason) in lastErrors.decode((Int64, String).self) { all[id]?.lastError = reason }
        return all
    }

    /// Folds up to `limit` of the oldest changes into the totals, in one transaction; returns how
    /// many it folded. Changes of notifications that no longer exist are dropped. Several workers
    /// may fold at once: each takes changes the others have not locked, and the totals are
    /// upserted in notification order, so two folds never wait on each other in a circle.
    @discardableResult
    public func fold(limit: Int = 10_000) async throws -> Int {
        let rows = try await client.query(
            """
            WITH folded AS (
                DELETE FROM notification_counter_changes
                WHERE id IN (SELECT id FROM notification_counter_changes ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened
            ), summed AS (
                INSERT INTO notification_counters AS c
                    (notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened)
                SELECT f.notification_id, sum(f.pending), sum(f.retrying), sum(f.sent), sum(f.failed), sum(f.dead),
                       sum(f.cancelled), sum(f.delivered), sum(f.opened)
                FROM folded f
                WHERE EXISTS (SELECT 1 FROM notifications n WHERE n.id = f.notification_id)
                GROUP BY f.notification_id
                ORDER BY f.notification_id
                ON CONFLICT (notification_id) DO UPDATE SET
                    pending = c.pending + EXCLUDED.pending, retrying = c.retrying + EXCLUDED.retrying,
                    sent = c.sent + EXCLUDED.sent, failed = c.failed + EXCLUDED.failed, dead = c.dead + EXCLUDED.dead,
                    cancelled = c.cancelled + EXCLUDED.cancelled, delivered = c.delivered + EXCLUDED.delivered,
                    opened = c.opened + EXCLUDED.opened
            )
            SELECT count(*)::int8 FROM folded
            """,
            logger: logger
        )
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }
}
