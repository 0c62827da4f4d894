import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Everything an app holds about one person, as one JSON document written piece by piece: the
/// devices that have or ever had their alias (with history and Live Activity tokens), their stateful
/// notifications, every push to those devices with its state and times, and the sandbox's copies.
///
/// PostgreSQL renders each element; rows are read as they are written, in one read-only snapshot, so
/// a person with a million deliveries costs memory for one chunk.
public struct PersonExportStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Writes the document through `write`, in chunks of about `chunkSize` bytes; returns how many
    /// elements it held.
    @discardableResult
    public func export(
        alias: String, appID: Int64, chunkSize: Int = 64 * 1024, write: (String) async throws -> Void
    ) async throws -> Int {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
            let ids = try await PersonalRows.devices(of: alias, appID: appID, on: connection, logger: logger)
            let held = try await HeldPeriods.of(ids, alias: alias, on: connection, logger: logger)
            var out = ExportChunks(size: chunkSize)
            let header = try JSONEncoder().encode(["user_alias": alias])
            try await out.append("{" + String(decoding: header.dropFirst().dropLast(), as: UTF8.self) + ",\"app_id\":\(appID)", to: write)
            for (name, query) in sections(alias: alias, appID: appID, devices: ids, held: held) {
                try await out.append(",\"\(name)\":[", to: write)
                var first = true
                for try await element in try await connection.query(query, logger: logger).decode(String.self) {
                    try await out.append(first ? element : "," + element, to: write)
                    out.elements += 1
                    first = false
                }
                try await out.append("]", to: write)
            }
            try await out.append("}\n", to: write)
            try await out.flush(to: write)
            return out.elements
        }
    }

    private func sections(alias: String, appID: Int64, devices ids: [Int64], held: HeldPeriods) -> [(String, PostgresQuery)] {
        [
            (
                "devices",
                """
                -- A device another user holds now is theirs: only that the person had it, until when,
                -- and its token are this person's; its name, properties and alias are the other's.
                SELECT jsonb_strip_nulls(jsonb_build_object(
                    'id', d.id, 'provider', d.provider, 'token', d.token,
                    'user_alias', CASE WHEN held.by_another THEN 'another user' ELSE d.user_alias END,
                    'held_until', held.until,
                    'name', CASE WHEN NOT held.by_another THEN d.name END,
                    'language', CASE WHEN NOT held.by_another THEN d.language END,
                    'country', CASE WHEN NOT held.by_another THEN d.country END,
                    'custom_properties', CASE WHEN NOT held.by_another THEN d.custom_properties END,
                    'platform_properties', CASE WHEN NOT held.by_another THEN d.platform_properties END,
                    'tags', CASE WHEN NOT held.by_another THEN to_jsonb(d.tags) END,
                    'latitude', CASE WHEN NOT held.by_another THEN d.latitude END,
                    'longitude', CASE WHEN NOT held.by_another THEN d.longitude END,
                    'platform', d.platform, 'apns_environment', d.apns_environment,
                    'created_at', d.created_at, 'registered_at', d.registered_at, 'updated_at', d.updated_at,
                    'unregistered_at', d.unregistered_at, 'invalidated_at', d.invalidated_at,
                    'invalidation_reason', d.invalidation_reason, 'merged_into', d.merged_into,
                    'history', (SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                                    'event', e.event, 'at', e.at, 'detail', e.detail,
                                    'user_alias', CASE WHEN e.user_alias = \(alias) THEN e.user_alias
                                                       WHEN e.user_alias IS NOT NULL THEN 'another user' END,
                                    'previous_alias', CASE WHEN e.previous_alias = \(alias) THEN e.previous_alias
                                                           WHEN e.previous_alias IS NOT NULL THEN 'another user' END))
                                    ORDER BY e.id), '[]')
                                FROM device_events e WHERE e.device_id = d.id AND (NOT held.by_another OR e.at <= held.until)),
                    'live_activity_tokens', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                                 'activity_id', t.activity_id, 'token', t.token, 'attributes_type', t.attributes_type,
                                                 'created_at', t.created_at, 'updated_at', t.updated_at) ORDER BY t.created_at), '[]')
                                             FROM live_activity_tokens t WHERE t.device_id = d.id AND NOT held.by_another),
                    'push_to_start_tokens', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                                 'attributes_type', s.attributes_type, 'token', s.token, 'updated_at', s.updated_at)
                                                 ORDER BY s.attributes_type), '[]')
                                             FROM push_to_start_tokens s WHERE s.device_id = d.id AND NOT held.by_another)
                ))::text
                FROM devices d
                JOIN unnest(\(held.ids)::int8[], \(held.byAnother)::bool[], \(held.until)::text[]) AS h(device_id, by_another, until_text) ON h.device_id = d.id
                CROSS JOIN LATERAL (SELECT h.by_another, NULLIF(h.until_text, '')::timestamptz AS until) AS held
                ORDER BY d.id
                """
            ),
            (
                "user_notifications",
                """
                SELECT jsonb_build_object(
                    'notification_id', u.notification_id, 'read_state', u.read_state, 'user_action_state', u.user_action_state,
                    'created_at', u.created_at, 'updated_at', u.updated_at, 'expires_at', u.expires_at, 'content', n.content
                )::text
                FROM user_notifications u JOIN notifications n ON n.id = u.notification_id
                WHERE u.app_id = \(appID) AND u.user_alias = \(alias) ORDER BY u.notification_id
                """
            ),
            (
                "deliveries",
                """
                SELECT jsonb_strip_nulls(jsonb_build_object(
                    'delivery_id', q.id, 'notification_id', q.notification_id, 'device_id', q.device_id, 'state', q.state,
                    'attempts', q.attempts, 'created_at', q.created_at, 'sent_at', q.sent_at, 'failed_at', q.failed_at,
                    'dead_at', q.dead_at, 'cancelled_at', q.cancelled_at, 'reason', q.reason,
                    'delivered_at', q.delivered_at, 'opened_at', q.opened_at, 'notification', n.content
                ))::text
                FROM deliveries q JOIN notifications n ON n.id = q.notification_id JOIN devices d ON d.id = q.device_id
                JOIN unnest(\(held.ids)::int8[], \(held.byAnother)::bool[], \(held.until)::text[]) AS h(device_id, by_another, until_text) ON h.device_id = d.id
                CROSS JOIN LATERAL (SELECT h.by_another, NULLIF(h.until_text, '')::timestamptz AS until) AS held
                WHERE q.device_id = ANY(\(ids)::int8[]) AND q.kind <> 'sync' AND (NOT held.by_another OR q.created_at <= held.until)
                ORDER BY q.id
                """
            ),
            (
                "sandbox_pushes",
                """
                SELECT jsonb_build_object(
                    'delivery_id', p.delivery_id, 'notification_id', p.notification_id, 'device_id', p.device_id,
                    'provider', p.provider, 'token', p.token, 'headers', p.headers, 'payload', p.payload, 'created_at', p.created_at
                )::text
                FROM sandbox_pushes p JOIN devices d ON d.id = p.device_id
                JOIN unnest(\(held.ids)::int8[], \(held.byAnother)::bool[], \(held.until)::text[]) AS h(device_id, by_another, until_text) ON h.device_id = d.id
                CROSS JOIN LATERAL (SELECT h.by_another, NULLIF(h.until_text, '')::timestamptz AS until) AS held
                WHERE p.device_id = ANY(\(ids)::int8[]) AND (NOT held.by_another OR p.created_at <= held.until)
                ORDER BY p.id
                """
            ),
        ]
    }
}

/// For each of a person's devices: whether another user holds it now, and until when the person
/// held it (their alias's last move away from it, as text PostgreSQL reads back).
private struct HeldPeriods {
    var ids: [Int64] = []
    var byAnother: [Bool] = []
    var until: [String] = []

    static func of(_ devices: [Int64], alias: String, on connection: PostgresConnection, logger: Logger) async throws -> HeldPeriods {
        var held = HeldPeriods()
        for try await (id, byAnother, until) in try await connection.query(
            """
            SELECT d.id, d.user_alias IS NOT NULL AND d.user_alias <> \(alias),
                   coalesce((SELECT max(e.at) FROM device_events e WHERE e.device_id = d.id AND e.previous_alias = \(alias))::text, '')
            FROM devices d WHERE d.id = ANY(\(devices)::int8[])
            """,
            logger: logger
        ).decode((Int64, Bool, String).self) {
            held.ids.append(id)
            held.byAnother.append(byAnother)
            held.until.append(until)
        }
        return held
    }
}

/// Gathers small pieces into chunks before handing them on.
private struct ExportChunks {
    let size: Int
    var buffer = ""
    var elements = 0

    mutating func append(_ text: String, to write: (String) async throws -> Void) async throws {
        buffer += text
        if buffer.utf8.count >= size { try await flush(to: write) }
    }

    mutating func flush(to write: (String) async throws -> Void) async throws {
        guard !buffer.isEmpty else { return }
        try await write(buffer)
        buffer = ""
    }
}
