import Logging
import NotifiableCore
import PostgresNIO

/// Erasing a person from an app: every device that has or ever had their alias becomes an
/// anonymous row (its deliveries stay, so every notification's counters stay exact), and
/// everything else that names them or their devices is deleted, in one transaction.
///
/// Each statement reaches its rows through an index on the alias or the device ids: the cost grows
/// with what the person has, not with the app (`scripts/bench` row 10 measures it on a million devices).
public struct PersonErasureStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public func erase(alias: String, appID: Int64) async throws -> ErasedData {
        // A user marking a notification read, or a device changing, may take rows in another order
        // meanwhile, or a registration commit a row this one meets.
        try await retryingConflicts { try await eraseOnce(alias: alias, appID: appID) }
    }

    private func eraseOnce(alias: String, appID: Int64) async throws -> ErasedData {
        try await client.withTransaction(logger: logger) { connection in
            var erased = ErasedData()
            // The user's rows first, as the stateful notifications' writers take them (user
            // notification, then its sync deliveries).
            try await eraseUser(alias, appID: appID, into: &erased, on: connection)
            // A registration naming the alias may commit while this runs; a second look erases it.
            for _ in 0..<3 {
                let ids = try await PersonalRows.devices(of: alias, appID: appID, on: connection, logger: logger)
                guard !ids.isEmpty else { break }
                try await erase(devices: ids, into: &erased, on: connection)
            }
            return erased
        }
    }

    private func erase(devices ids: [Int64], into erased: inout ErasedData, on connection: PostgresConnection) async throws {
        erased.deliveriesCancelled += try await ErasedDeliveries.cancelWaiting(ofDevices: ids, on: connection, logger: logger)
        erased.deliveriesAnonymised += try await ErasedDeliveries.anonymise(ofDevices: ids, on: connection, logger: logger)
        // The token becomes one that no registration can name (a space: PushToken refuses it for
        // every provider), so the row stays unique in its app and nobody can take it over; the
        // history trigger records nothing for an erased row.
        erased.devices += try await count(
            """
            UPDATE devices SET token = 'erased ' || id, name = NULL, user_alias = NULL, language = NULL, country = NULL,
                               custom_properties = '{}', platform_properties = '{}', tags = '{}', platform = NULL,
                               apns_environment = NULL, push_keys = NULL, badge = 0, invalidation_reason = NULL,
                               unregistered_at = coalesce(unregistered_at, now()), erased_at = now(), updated_at = now()
            WHERE id = ANY(\(ids)::int8[]) AND erased_at IS NULL
            RETURNING 1
            """, on: connection)
        erased.deviceEvents += try await count(
            "DELETE FROM device_events WHERE device_id = ANY(\(ids)::int8[]) RETURNING 1",
            on: connection)
        erased.liveActivityTokens += try await count(
            "DELETE FROM live_activity_tokens WHERE device_id = ANY(\(ids)::int8[]) RETURNING 1",
            on: connection)
        erased.pushToStartTokens += try await count(
            "DELETE FROM push_to_start_tokens WHERE device_id = ANY(\(ids)::int8[]) RETURNING 1",
            on: connection)
        erased.sandboxPushes += try await count(
            "DELETE FROM sandbox_pushes WHERE device_id = ANY(\(ids)::int8[]) RETURNING 1",
            on: connection)
        // Events of every webhook, delivered or waiting: a waiting one would carry the alias out,
        // and a delivered one has no further use.
        erased.webhookEvents += try await count(
            """
            DELETE FROM webhook_events
            WHERE payload ? 'device_id' AND (payload ->> 'device_id') = ANY(\(ids.map(String.init))::text[])
            RETURNING 1
            """, on: connection)
    }

    private func eraseUser(_ alias: String, appID: Int64, into erased: inout ErasedData, on connection: PostgresConnection) async throws {
        erased.userNotifications += try await count(
            """
            DELETE FROM user_notifications WHERE app_id = \(appID) AND user_alias = \(alias) RETURNING 1
            """, on: connection)
        erased.userNotificationChanges += try await count(
            """
            DELETE FROM user_notification_changes WHERE app_id = \(appID) AND user_alias = \(alias) RETURNING 1
            """, on: connection)
        erased.userFeeds += try await count(
            "DELETE FROM user_feeds WHERE app_id = \(appID) AND user_alias = \(alias) RETURNING 1",
            on: connection)
        // The expression matches notifications_user_aliases_idx.
        erased.notificationsRetargeted += try await count(
            """
            UPDATE notifications
            SET targeting = jsonb_set(targeting, '{user_aliases}', coalesce(
                    (SELECT jsonb_agg(a) FROM jsonb_array_elements(targeting -> 'user_aliases') AS a WHERE a <> to_jsonb(\(alias)::text)),
                    '[]'::jsonb))
            WHERE app_id = \(appID) AND (targeting -> 'user_aliases') ? \(alias)
            RETURNING 1
            """, on: connection)
    }

    /// Runs a statement that returns a row per row it changed; how many it changed.
    private func count(_ query: PostgresQuery, on connection: PostgresConnection) async throws -> Int64 {
        Int64(try await connection.query(query, logger: logger).count())
    }
}
