import Foundation
import Logging
import PostgresNIO

/// One row of notifiable-rails' `notifiable_device_tokens`, every column as text.
public struct NotifiableRailsDevice: Sendable, Equatable {
    public let id: Int64
    public let token: String?
    public let provider: String?
    public let locale: String?
    public let language: String?
    public let country: String?
    public let name: String?
    public let userAlias: String?
    /// False only where the table still has the `is_valid` column of notifiable-rails before 2017
    /// and the row was marked invalid.
    public let isValid: Bool
}

/// Reads the device tokens of a notifiable-rails database, in id order, a page at a time.
///
/// The table's shape follows notifiable-rails' migrations: `token`, `provider`, `locale`,
/// `user_alias`, `app_id` and timestamps (2013), `name` (2013), `is_valid` dropped (2017),
/// `language` and `country` (2018). Columns an older or newer schema lacks read as null, and
/// apps from before `user_alias` (which had `user_id`) give the user id as the alias.
public struct NotifiableRailsDeviceStore: Sendable {
    let client: Database
    let logger: Logger
    let expressions: [String: String]
    /// notifiable-rails' own app id to read, or every app's tokens when nil.
    let railsAppID: Int64?

    public static let table = "notifiable_device_tokens"

    /// Looks at the table's columns; fails when the database has no `notifiable_device_tokens`.
    public static func open(client: Database, railsAppID: Int64?, logger: Logger) async throws -> NotifiableRailsDeviceStore {
        var columns: Set<String> = []
        for try await name in try await client.query(
            """
            SELECT column_name::text FROM information_schema.columns
            WHERE table_name = \(table) AND table_schema = ANY (current_schemas(false))
            """,
            logger: logger
        ).decode(String.self) {
            columns.insert(name)
        }
        guard columns.contains("id"), columns.contains("token") else {
            throw StoreError(description: "the database has no \(table) table with id and token columns")
        }
        // Only known column names reach the SQL text, so the query stays free of outside input.
        var expressions: [String: String] = [:]
        for column in ["token", "provider", "locale", "language", "country", "name"] {
            expressions[column] = columns.contains(column) ? "\(column)::text" : "NULL::text"
        }
        expressions["user_alias"] =
            columns.contains("user_alias")
            ? "user_alias::text"
            : columns.contains("user_id") ? "user_id::text" : "NULL::text"
        expressions["is_valid"] = columns.contains("is_valid") ? "COALESCE(is_valid, true)" : "true"
        if railsAppID != nil, !columns.contains("app_id") {
            throw StoreError(description: "\(table) has no app_id column to choose an app by")
        }
        return NotifiableRailsDeviceStore(client: client, logger: logger, expressions: expressions, railsAppID: railsAppID)
    }

    /// Chooses notifiable-rails' app; an integer, so safe as SQL text (the column may not exist,
    /// so it cannot be a bound "IS NULL OR" condition).
    private var appFilter: String { railsAppID.map { "AND app_id = \($0)" } ?? "" }

    /// How many rows lie after `afterID` (for progress and its ETA).
    public func count(afterID: Int64) async throws -> Int {
        let rows = try await client.query(
            """
            SELECT count(*) FROM \(unescaped: Self.table) WHERE id > \(afterID) \(unescaped: appFilter)
            """,
            logger: logger
        )
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// The next `limit` rows after `afterID`, by id: keyset pagination, each page one indexed range scan.
    public func page(afterID: Int64, limit: Int) async throws -> [NotifiableRailsDevice] {
        let select = ["token", "provider", "locale", "language", "country", "name", "user_alias", "is_valid"]
            .map { expressions[$0]! }.joined(separator: ", ")
        let rows = try await client.query(
            """
            SELECT id::int8, \(unescaped: select) FROM \(unescaped: Self.table)
            WHERE id > \(afterID) \(unescaped: appFilter)
            ORDER BY id LIMIT \(limit)
            """,
            logger: logger
        )
        var page: [NotifiableRailsDevice] = []
        for try await (id, token, provider, locale, language, country, name, alias, valid) in rows.decode(
            (Int64, String?, String?, String?, String?, String?, String?, String?, Bool).self
        ) {
            page.append(
                NotifiableRailsDevice(
                    id: id, token: token, provider: provider, locale: locale, language: language, country: country,
                    name: name, userAlias: alias, isValid: valid
                ))
        }
        return page
    }
}
