import Foundation
import Logging
import PostgresNIO

/// One hour of an app's pushes.
public struct HourlyTrend: Sendable, Equatable {
    public let hour: Date
    public var sent: Int64
    public var failed: Int64
    public var dead: Int64
    public var delivered: Int64
    public var opened: Int64
}

/// An app's trends (migration 0022): rolled up per hour as deliveries change, so a week of them is
/// a few hundred rows however many deliveries it held. A read adds the changes not folded yet, as
/// the counters do, so it is exact to the moment. They count what happened in each hour: a change
/// that takes a count back (dead deliveries re-queued) takes nothing from the hour they died in.
public struct TrendStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Hours since `since`, oldest first, of one app or (nil) of every app added up; hours with
    /// nothing are left out.
    public func hourly(appID: Int64?, since: Date) async throws -> [HourlyTrend] {
        let rows = try await client.query(
            """
            SELECT hour, sum(sent)::int8, sum(failed)::int8, sum(dead)::int8, sum(delivered)::int8, sum(opened)::int8 FROM (
                SELECT hour, sent, failed, dead, delivered, opened FROM app_hourly_stats
                WHERE (\(appID)::int8 IS NULL OR app_id = \(appID)) AND hour >= date_trunc('hour', \(since)::timestamptz)
                UNION ALL
                SELECT date_trunc('hour', c.at), greatest(c.sent, 0), greatest(c.failed, 0), greatest(c.dead, 0), greatest(c.delivered, 0),
                       greatest(c.opened, 0)
                FROM notification_counter_changes c JOIN notifications n ON n.id = c.notification_id
                WHERE (\(appID)::int8 IS NULL OR n.app_id = \(appID)) AND c.at >= date_trunc('hour', \(since)::timestamptz)
            ) AS hours
            GROUP BY hour ORDER BY hour
            """,
            logger: logger)
        var trends: [HourlyTrend] = []
        for try await (hour, sent, failed, dead, delivered, opened) in rows.decode((Date, Int64, Int64, Int64, Int64, Int64).self) {
            trends.append(HourlyTrend(hour: hour, sent: sent, failed: failed, dead: dead, delivered: delivered, opened: opened))
        }
        return trends
    }

    /// Failures (failed for good, or given up) since `since` by reason, most first.
    public func failureReasons(appID: Int64, since: Date) async throws -> [(reason: String, deliveries: Int64)] {
        let rows = try await client.query(
            """
            SELECT reason, sum(deliveries)::int8 FROM (
                SELECT reason, deliveries FROM app_hourly_failures WHERE app_id = \(appID) AND hour >= date_trunc('hour', \(since)::timestamptz)
                UNION ALL
                SELECT reason, deliveries FROM delivery_failure_changes WHERE app_id = \(appID) AND at >= date_trunc('hour', \(since)::timestamptz)
            ) AS failures
            GROUP BY reason ORDER BY 2 DESC, 1 LIMIT 20
            """,
            logger: logger)
        var reasons: [(String, Int64)] = []
        for try await (reason, count) in rows.decode((String, Int64).self) { reasons.append((reason, count)) }
        return reasons
    }

    /// Folds up to `limit` failure changes into their app's hours; returns how many it folded.
    /// Changes of apps that no longer exist are dropped.
    @discardableResult
    public func foldFailures(limit: Int = 10_000) async throws -> Int {
        let rows = try await client.query(
            """
            WITH folded AS (
                DELETE FROM delivery_failure_changes
                WHERE id IN (SELECT id FROM delivery_failure_changes ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING app_id, reason, deliveries, at
            ), live AS (
                SELECT id FROM apps WHERE id IN (SELECT app_id FROM folded) ORDER BY id FOR KEY SHARE
            ), summed AS (
                INSERT INTO app_hourly_failures AS h (app_id, hour, reason, deliveries)
                SELECT f.app_id, date_trunc('hour', f.at), f.reason, sum(f.deliveries)
                FROM folded f JOIN live ON live.id = f.app_id
                GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
                ON CONFLICT (app_id, hour, reason) DO UPDATE SET deliveries = h.deliveries + EXCLUDED.deliveries
            )
            SELECT count(*)::int8 FROM folded
            """,
            logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// Drops the trends of hours before `cutoff` (the service's retention); returns how many rows went.
    @discardableResult
    public func prune(before cutoff: Date) async throws -> Int {
        var removed = 0
        for statement: PostgresQuery in [
            "DELETE FROM app_hourly_stats WHERE hour < \(cutoff) RETURNING 1", "DELETE FROM app_hourly_failures WHERE hour < \(cutoff) RETURNING 1",
            "DELETE FROM notification_minute_sends WHERE minute < \(cutoff) RETURNING 1",
        ] {
            removed += try await client.query(statement, logger: logger).count()
        }
        return removed
    }
}
