import Foundation
import Logging
import PostgresNIO

/// Where a state-changing action came from.
public enum AuditChannel: String, Sendable, Codable {
    case console
    case adminAPI = "admin-api"
    case cli
    /// A backend's request with the app's server credentials.
    case api
}

/// One line of the audit log: who did what, to which app, when, from where, and how it ended.
public struct AuditEntry: Sendable, Equatable, Codable {
    public var id: Int64?
    public var at: Date?
    public var actor: String
    public var channel: AuditChannel
    public var action: String
    public var appID: Int64?
    public var origin: String?
    public var status: Int
    /// A few facts worth keeping beside the action (the operator added, the notification made).
    public var detail: [String: String]?

    public init(actor: String, channel: AuditChannel, action: String, appID: Int64?, origin: String?, status: Int, detail: [String: String]? = nil) {
        self.actor = actor
        self.channel = channel
        self.action = action
        self.appID = appID
        self.origin = origin
        self.status = status
        self.detail = detail
    }

    enum CodingKeys: String, CodingKey {
        case id, at, actor, channel, action, origin, status, detail
        case appID = "app_id"
    }
}

extension AuditEntry {
    /// The entry as one line of the JSON-lines export: keys sorted, time in ISO 8601 UTC.
    public func jsonLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return (try? String(decoding: encoder.encode(self), as: UTF8.self)) ?? "{}"
    }
}

/// The audit log (`audit_log`): written once per action, never changed.
public struct AuditLogStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public func record(_ entry: AuditEntry) async throws {
        let detail = try entry.detail.map { try StoredJSON.text($0) }
        try await client.query(
            """
            INSERT INTO audit_log (actor, channel, action, app_id, origin, status, detail)
            VALUES (\(entry.actor), \(entry.channel.rawValue), \(entry.action), \(entry.appID), \(entry.origin), \(entry.status), \(detail)::jsonb)
            """,
            logger: logger)
    }

    /// Newest first, before `beforeID`; only `appID`'s when given.
    public func list(appID: Int64? = nil, beforeID: Int64? = nil, limit: Int) async throws -> [AuditEntry] {
        try await entries(
            """
            SELECT id, at, actor, channel, action, app_id, origin, status, detail::text FROM audit_log
            WHERE (\(appID)::int8 IS NULL OR app_id = \(appID)) AND id < coalesce(\(beforeID)::int8, 9223372036854775807)
            ORDER BY id DESC LIMIT \(limit)
            """)
    }

    /// Every entry, oldest first (only `appID`'s when given, only from `since`), a thousand at a
    /// time: what `audit export` and the console's export write, never all held at once.
    public func export(since: Date?, appID: Int64?, _ each: (AuditEntry) async throws -> Void) async throws {
        var after: Int64 = 0
        while true {
            let page = try await entries(
                """
                SELECT id, at, actor, channel, action, app_id, origin, status, detail::text FROM audit_log
                WHERE id > \(after) AND (\(since)::timestamptz IS NULL OR at >= \(since)) AND (\(appID)::int8 IS NULL OR app_id = \(appID))
                ORDER BY id LIMIT 1000
                """)
            for entry in page { try await each(entry) }
            guard page.count == 1000, let last = page.last?.id else { return }
            after = last
        }
    }

    /// An app's entries of `action` whose detail `key` is one of `values`, newest first.
    public func entries(action: String, appID: Int64, detail key: String, in values: [String]) async throws -> [AuditEntry] {
        try await entries(
            """
            SELECT id, at, actor, channel, action, app_id, origin, status, detail::text FROM audit_log
            WHERE app_id = \(appID) AND action = \(action) AND detail ->> \(key) = ANY(\(values)::text[])
            ORDER BY id DESC
            """)
    }

    private func entries(_ query: PostgresQuery) async throws -> [AuditEntry] {
        let rows = try await client.query(query, logger: logger)
        var entries: [AuditEntry] = []
        for try await (id, at, actor, channel, action, appID, origin, status, detail) in rows.decode(
            (Int64, Date, String, String, String, Int64?, String?, Int32, String?).self)
        {
            var entry = AuditEntry(
                actor: actor, channel: AuditChannel(rawValue: channel) ?? .console, action: action, appID: appID, origin: origin, status: Int(status),
                detail: try detail.map { try StoredJSON.decode([String: String].self, from: $0) })
            entry.id = id
            entry.at = at
            entries.append(entry)
        }
        return entries
    }
}
