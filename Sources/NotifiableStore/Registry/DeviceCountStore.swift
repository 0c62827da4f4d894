import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// An app's devices by what a send can do with them.
public struct AppDeviceCounts: Sendable, Equatable {
    /// Reachable (registered, not invalidated, not merged), by provider.
    public var reachable: [Provider: Int64] = [:]
    /// Registered but invalidated by a gateway.
    public var invalidated: Int64 = 0

    public init(reachable: [Provider: Int64] = [:], invalidated: Int64 = 0) {
        self.reachable = reachable
        self.invalidated = invalidated
    }

    /// Reachable devices of `provider`.
    public subscript(provider: Provider) -> Int64 { reachable[provider] ?? 0 }
}

/// Each app's device counts, kept as devices change (the devices_count_* triggers,
/// Registry/SQL/): totals in `device_counts`, one row per app and class (a provider's name or
/// `invalidated`), plus the changes the devices' triggers appended and the queue's maintenance has
/// not folded yet, read in one statement so the sum is exact.
public struct DeviceCountStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public func counts(appID: Int64) async throws -> AppDeviceCounts {
        try await counts(appIDs: [appID])[appID] ?? AppDeviceCounts()
    }

    /// The apps' counts; an app with no device is absent.
    public func counts(appIDs: [Int64]) async throws -> [Int64: AppDeviceCounts] {
        let rows = try await client.query(
            """
            SELECT app_id, class, sum(devices)::int8 FROM (
                SELECT app_id, class, devices FROM device_counts WHERE app_id = ANY(\(appIDs)::int8[])
                UNION ALL
                SELECT app_id, class, devices FROM device_count_changes WHERE app_id = ANY(\(appIDs)::int8[]) AND class IS NOT NULL
            ) AS counts
            GROUP BY app_id, class
            """,
            logger: logger)
        var counts: [Int64: AppDeviceCounts] = [:]
        for try await (app, rawClass, devices) in rows.decode((Int64, String, Int64).self) {
            var count = counts[app] ?? AppDeviceCounts()
            // A class emptied keeps its row; it counts as absent, so equal counts compare equal.
            if devices == 0 {
                counts[app] = count
                continue
            }
            if rawClass == "invalidated" {
                count.invalidated += devices
            } else if let provider = Provider(rawValue: rawClass) {
                count.reachable[provider, default: 0] += devices
            }
            counts[app] = count
        }
        return counts
    }

    /// Devices new to each of the apps since `since`, by whole hours: the trends' roll-up and
    /// the changes not folded yet.
    public func newDevices(appIDs: [Int64], since: Date) async throws -> [Int64: Int64] {
        let rows = try await client.query(
            """
            SELECT app_id, sum(new_devices)::int8 FROM (
                SELECT app_id, new_devices FROM app_hourly_stats
                WHERE app_id = ANY(\(appIDs)::int8[]) AND hour >= date_trunc('hour', \(since)::timestamptz) AND new_devices <> 0
                UNION ALL
                SELECT app_id, new_devices FROM device_count_changes
                WHERE app_id = ANY(\(appIDs)::int8[]) AND at >= date_trunc('hour', \(since)::timestamptz)
            ) AS added
            GROUP BY app_id
            """,
            logger: logger)
        var counts: [Int64: Int64] = [:]
        for try await (app, count) in rows.decode((Int64, Int64).self) { counts[app] = count }
        return counts
    }

    /// Folds up to `limit` of the oldest changes into the totals and the apps' hours, in one transaction; returns how many it folded. Changes of apps that no longer exist
    /// are dropped. Several workers may fold at once: each takes changes the others have not
    /// locked, and rows are upserted in key order, so two folds never wait on each other in a circle.
    @discardableResult
    public func fold(limit: Int = 10_000) async throws -> Int {
        let rows = try await client.query(
            """
            WITH folded AS (
                DELETE FROM device_count_changes
                WHERE id IN (SELECT id FROM device_count_changes ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING app_id, class, devices, new_devices, at
            ), live AS (
                SELECT id FROM apps WHERE id IN (SELECT app_id FROM folded) ORDER BY id FOR KEY SHARE
            ), hourly AS (
                INSERT INTO app_hourly_stats AS h (app_id, hour, new_devices)
                SELECT f.app_id, date_trunc('hour', f.at), sum(f.new_devices)
                FROM folded f JOIN live ON live.id = f.app_id
                WHERE f.new_devices <> 0
                GROUP BY 1, 2 ORDER BY 1, 2
                ON CONFLICT (app_id, hour) DO UPDATE SET new_devices = h.new_devices + EXCLUDED.new_devices
            ), summed AS (
                INSERT INTO device_counts AS c (app_id, class, devices)
                SELECT f.app_id, f.class, sum(f.devices)
                FROM folded f JOIN live ON live.id = f.app_id
                WHERE f.class IS NOT NULL
                GROUP BY 1, 2 HAVING sum(f.devices) <> 0 ORDER BY 1, 2
                ON CONFLICT (app_id, class) DO UPDATE SET devices = c.devices + EXCLUDED.devices
            )
            SELECT count(*)::int8 FROM folded
            """,
            logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }
}
