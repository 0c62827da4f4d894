import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// A notification's delivery counters, kept by the deliveries table's triggers
/// (deliveries_count_changes, Notifications/SQL/deliveries_count_changes.sql):
/// every statement on deliveries appends what it changed to `notification_counter_changes`, the
/// queue's maintenance folds those rows into `notification_counters`, and a read adds the two.
/// Reading costs the same for 1 delivery or 1,000,000, and is exact whenever it happens.
public struct NotificationCounterStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The counters of each notification in `ids` (zeros for one without deliveries), with its
    /// latest error: one statement, whatever the number of notifications or deliveries, so the
    /// folded totals and the changes not folded yet come from one snapshot (after a first that
    /// reads which days hold their pushes).
    public func counters(notificationIDs ids: [Int64]) async throws -> [Int64: NotificationCounters] {
        var all: [Int64: NotificationCounters] = [:]
        for id in ids { all[id] = NotificationCounters() }
        let days = try await DeliveryPartitions.pushDays(ofNotifications: ids, on: client, logger: logger)
        let rows = try await client.query(
            """
            SELECT n.id, c.pending, c.retrying, c.sent, c.failed, c.dead, c.cancelled, c.delivered, c.opened, e.reason
            FROM unnest(\(ids)::int8[]) AS n (id)
            CROSS JOIN LATERAL (
                SELECT coalesce(sum(pending), 0)::int8 AS pending, coalesce(sum(retrying), 0)::int8 AS retrying,
                       coalesce(sum(sent), 0)::int8 AS sent, coalesce(sum(failed), 0)::int8 AS failed,
                       coalesce(sum(dead), 0)::int8 AS dead, coalesce(sum(cancelled), 0)::int8 AS cancelled,
                       coalesce(sum(delivered), 0)::int8 AS delivered, coalesce(sum(opened), 0)::int8 AS opened
                FROM (
                    SELECT pending, retrying, sent, failed, dead, cancelled, delivered, opened
                    FROM notification_counters WHERE notification_id = n.id
                    UNION ALL
                    SELECT pending, retrying, sent, failed, dead, cancelled, delivered, opened
                    FROM notification_counter_changes WHERE notification_id = n.id
                ) AS counts
            ) AS c
            -- The newest failed delivery: one step down deliveries_latest_error_idx.
            LEFT JOIN LATERAL (
                SELECT reason FROM deliveries
                WHERE notification_id = n.id AND day = ANY(\(days)::int4[])
                  AND kind <> 'sync' AND reason IS NOT NULL AND state IN ('retrying', 'failed', 'dead')
                ORDER BY updated_at DESC LIMIT 1
            ) AS e ON true
            """,
            logger: logger
        )
        for try await (id, pending, retrying, sent, failed, dead, cancelled, delivered, opened, lastError) in rows.decode(
            (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, String?).self
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
            counters.lastError = lastError
            all[id] = counters
        }
        return all
    }

    /// Folds up to `limit` of the oldest changes into the totals, and into their app's hour and
    /// their notification's minute (the trends), in one transaction; returns how many it folded. Changes of notifications that no longer exist are dropped. Several workers
    /// may fold at once: each takes changes the others have not locked, and the totals are
    /// upserted in notification order, so two folds never wait on each other in a circle.
    @discardableResult
    public func fold(limit: Int = 10_000) async throws -> Int {
        let rows = try await client.query(
            """
            WITH folded AS (
                DELETE FROM notification_counter_changes
                WHERE id IN (SELECT id FROM notification_counter_changes ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened, at
            ), live AS (
                -- Locked against deletion until the totals are written; one deleted meanwhile is
                -- skipped (its counters went with it), instead of failing the upsert's foreign key.
                SELECT id, app_id FROM notifications WHERE id IN (SELECT notification_id FROM folded) ORDER BY id FOR KEY SHARE
            ), hourly AS (
                INSERT INTO app_hourly_stats AS h (app_id, hour, sent, failed, dead, delivered, opened)
                SELECT live.app_id, date_trunc('hour', f.at), sum(greatest(f.sent, 0)), sum(greatest(f.failed, 0)), sum(greatest(f.dead, 0)),
                       sum(greatest(f.delivered, 0)), sum(greatest(f.opened, 0))
                FROM folded f JOIN live ON live.id = f.notification_id
                WHERE f.at IS NOT NULL AND greatest(f.sent, f.failed, f.dead, f.delivered, f.opened) > 0
                GROUP BY 1, 2
                ORDER BY 1, 2
                ON CONFLICT (app_id, hour) DO UPDATE SET
                    sent = h.sent + EXCLUDED.sent, failed = h.failed + EXCLUDED.failed, dead = h.dead + EXCLUDED.dead,
                    delivered = h.delivered + EXCLUDED.delivered, opened = h.opened + EXCLUDED.opened
            ), minutes AS (
                INSERT INTO notification_minute_sends AS m (notification_id, minute, sent)
                SELECT f.notification_id, date_trunc('minute', f.at), sum(f.sent)
                FROM folded f JOIN live ON live.id = f.notification_id
                WHERE f.at IS NOT NULL AND f.sent > 0
                GROUP BY 1, 2
                ORDER BY 1, 2
                ON CONFLICT (notification_id, minute) DO UPDATE SET sent = m.sent + EXCLUDED.sent
            ), summed AS (
                INSERT INTO notification_counters AS c
                    (notification_id, pending, retrying, sent, failed, dead, cancelled, delivered, opened)
                SELECT f.notification_id, sum(f.pending), sum(f.retrying), sum(f.sent), sum(f.failed), sum(f.dead),
                       sum(f.cancelled), sum(f.delivered), sum(f.opened)
                FROM folded f JOIN live ON live.id = f.notification_id
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
