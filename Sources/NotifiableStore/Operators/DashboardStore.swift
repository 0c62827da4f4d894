import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// An app at a glance, for the operators' dashboard.
public struct AppOverview: Sendable {
    public let app: App
    /// Devices that can be reached (registered, not invalidated), by provider, and invalidated.
    public let devices: AppDeviceCounts
    /// Devices new to the app in the last 24 hours (whole hours).
    public let newLastDay: Int64
    /// How the app reaches each provider.
    public let gateways: [Provider: GatewayState]

    public func gateway(_ provider: Provider) -> GatewayState { gateways[provider] ?? .notConfigured }
}

/// How an app reaches one gateway, as operators need to see it.
public enum GatewayState: Sendable, Equatable {
    case notConfigured
    case ok
    case misconfigured(String)
}

/// The dashboard's read-only queries: aggregates the API's endpoints do not answer.
public struct DashboardStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// A page of apps, by id after `afterID`, of those in `appIDs` (nil: every app), with their
    /// device counts and gateways. The counts are kept as devices change (`DeviceCountStore`), so
    /// the page costs the same whatever the number of devices.
    public func appOverviews(in appIDs: [Int64]?, afterID: Int64?, limit: Int, now: Date = Date()) async throws -> [AppOverview] {
        let rows = try await client.query(
            """
            SELECT a.id, a.name, a.delivery_mode, a.created_at, a.updated_at
            FROM apps a
            WHERE a.id > \(afterID ?? 0) AND (\(appIDs)::int8[] IS NULL OR a.id = ANY(\(appIDs)::int8[]))
            ORDER BY a.id LIMIT \(limit)
            """,
            logger: logger
        )
        var apps: [App] = []
        for try await (id, name, mode, createdAt, updatedAt) in rows.decode((Int64, String, String, Date, Date).self) {
            apps.append(App(id: id, name: name, deliveryMode: DeliveryMode(rawValue: mode) ?? .live, createdAt: createdAt, updatedAt: updatedAt))
        }
        let ids = apps.map(\.id)
        var gateways: [Int64: [Provider: GatewayState]] = [:]
        let settings = try await client.query(
            """
            SELECT app_id, provider, misconfiguration_reason FROM (\(unescaped: GatewaySettingsTable.everyProvidersSettings)) AS s
            WHERE app_id = ANY(\(ids)::int8[])
            """,
            logger: logger)
        for try await (appID, name, problem) in settings.decode((Int64, String, String?).self) {
            guard let provider = Provider(rawValue: name) else { continue }
            gateways[appID, default: [:]][provider] = problem.map(GatewayState.misconfigured) ?? .ok
        }
        let counts = DeviceCountStore(client: client, logger: logger)
        let devices = try await counts.counts(appIDs: ids)
        let added = try await counts.newDevices(appIDs: ids, since: now.addingTimeInterval(-24 * 3600))
        return apps.map { app in
            AppOverview(
                app: app, devices: devices[app.id] ?? AppDeviceCounts(), newLastDay: added[app.id] ?? 0, gateways: gateways[app.id] ?? [:])
        }
    }

    /// Pushes accepted per minute, oldest first: the minutes rolled up (migration 0022) and the
    /// changes not folded yet, so a notification of a million deliveries reads a few hundred rows.
    public func sendsPerMinute(notificationID: Int64) async throws -> [(minute: Date, count: Int64)] {
        let rows = try await client.query(
            """
            SELECT minute, sum(sent)::int8 FROM (
                SELECT minute, sent FROM notification_minute_sends WHERE notification_id = \(notificationID)
                UNION ALL
                SELECT date_trunc('minute', at), sent FROM notification_counter_changes
                WHERE notification_id = \(notificationID) AND at IS NOT NULL AND sent > 0
            ) AS minutes
            GROUP BY 1 HAVING sum(sent) > 0 ORDER BY 1
            """,
            logger: logger
        )
        var minutes: [(Date, Int64)] = []
        for try await (minute, count) in rows.decode((Date, Int64).self) { minutes.append((minute, count)) }
        return minutes
    }

    /// Why deliveries failed, died or are being retried, most common first.
    public func failureReasons(notificationID: Int64) async throws -> [(state: String, reason: String, count: Int64)] {
        let days = try await DeliveryPartitions.pushDays(ofNotifications: [notificationID], on: client, logger: logger)
        let rows = try await client.query(
            """
            SELECT state, reason, count(*) FROM deliveries
            WHERE notification_id = \(notificationID) AND day = ANY(\(days)::int4[]) AND kind <> 'sync'
              AND state IN ('failed', 'dead', 'retrying') AND reason IS NOT NULL
            GROUP BY state, reason ORDER BY count(*) DESC, state, reason LIMIT 50
            """,
            logger: logger
        )
        var reasons: [(String, String, Int64)] = []
        for try await (state, reason, count) in rows.decode((String, String, Int64).self) { reasons.append((state, reason, count)) }
        return reasons
    }

    /// The app a notification belongs to.
    public func appID(notificationID: Int64) async throws -> Int64? {
        for try await id in try await client.query("SELECT app_id FROM notifications WHERE id = \(notificationID)", logger: logger).decode(Int64.self) {
            return id
        }
        return nil
    }

    /// A device's history shows its latest events, this many at most.
    public static let historyLength = 500

    /// What happened to a device lately, oldest first (kept by the `devices_history` trigger).
    /// An alias the device no longer has is shown as "a previous user": whoever reads the history
    /// of an anonymised or re-assigned device learns nothing of who held it before.
    public func history(deviceID: Int64, appID: Int64) async throws -> [(event: String, detail: String?, at: Date)] {
        let rows = try await client.query(
            """
            SELECT event,
                   CASE WHEN event = 'registered'
                        THEN CASE WHEN user_alias IS NULL THEN 'anonymous'
                                  WHEN user_alias = current_alias THEN 'user ' || user_alias ELSE 'a previous user' END
                        WHEN event IN ('user_changed', 'anonymised')
                        THEN CASE WHEN previous_alias IS NULL THEN 'anonymous'
                                  WHEN previous_alias = current_alias THEN previous_alias ELSE 'a previous user' END
                             || ' → ' ||
                             CASE WHEN user_alias IS NULL THEN 'anonymous'
                                  WHEN user_alias = current_alias THEN user_alias ELSE 'a previous user' END
                        ELSE detail END,
                   at
            FROM (
                SELECT e.id, e.event, e.detail, e.at, e.user_alias, e.previous_alias, d.user_alias AS current_alias
                FROM device_events e JOIN devices d ON d.id = e.device_id
                WHERE e.device_id = \(deviceID) AND d.app_id = \(appID)
                ORDER BY e.id DESC LIMIT \(Self.historyLength)
            ) AS latest
            ORDER BY id
            """,
            logger: logger
        )
        var events: [(String, String?, Date)] = []
        for try await (event, detail, at) in rows.decode((String, String?, Date).self) { events.append((event, detail, at)) }
        return events
    }

    /// A device's deliveries, newest first, before `beforeID`.
    public func deliveries(deviceID: Int64, appID: Int64, beforeID: Int64?, limit: Int) async throws -> [DeliveryRecord] {
        let rows = try await client.query(
            """
            SELECT \(unescaped: DeliveryRecord.columns)
            FROM deliveries q JOIN devices d ON d.id = q.device_id
            WHERE q.device_id = \(deviceID) AND q.app_id = \(appID) AND q.id < coalesce(\(beforeID)::int8, 9223372036854775807)
            ORDER BY q.id DESC LIMIT \(limit)
            """,
            logger: logger
        )
        var records: [DeliveryRecord] = []
        for try await row in rows { records.append(try DeliveryRecord.decode(row)) }
        return records
    }
}
