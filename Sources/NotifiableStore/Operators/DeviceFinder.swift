import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Which of an app's devices a console list shows; nil fields do not filter.
public struct DeviceListFilter: Sendable, Equatable {
    public var provider: Provider?
    public var language: String?
    public var country: String?
    public var tag: String?
    /// true: only invalidated devices; false: only reachable ones.
    public var invalidated: Bool?

    public init(provider: Provider? = nil, language: String? = nil, country: String? = nil, tag: String? = nil, invalidated: Bool? = nil) {
        self.provider = provider
        self.language = language
        self.country = country
        self.tag = tag
        self.invalidated = invalidated
    }
}

/// What the console's search box found.
public struct SearchResults: Sendable {
    public var devices: [Device] = []
    /// Notifications by id: (app id, notification id).
    public var notifications: [(appID: Int64, id: Int64)] = []
}

/// Finding devices for operators: the search box and an app's devices page. Every query is
/// answered by an index (ids, `(app_id, user_alias)`, the token prefix index of migration 0021,
/// `(app_id, id)` for pages), so it stays quick with millions of devices.
public struct DeviceFinder: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public static let maximumResults = 50

    /// Devices and notifications matching `text` in the apps given (nil: every app): a number is
    /// a device or notification id; otherwise a user alias, or the start of a push token.
    public func search(_ text: String, appIDs: [Int64]?) async throws -> SearchResults {
        let text = text.trimmingCharacters(in: .whitespaces)
        var results = SearchResults()
        guard !text.isEmpty, text.count <= 4096 else { return results }
        if let id = Int64(text), id > 0 {
            results.devices = try await devices(
                """
                SELECT \(unescaped: DeviceStore.columns) FROM devices
                WHERE id = \(id) AND merged_into IS NULL AND (\(appIDs)::int8[] IS NULL OR app_id = ANY(\(appIDs)::int8[]))
                """)
            let rows = try await client.query(
                "SELECT app_id, id FROM notifications WHERE id = \(id) AND (\(appIDs)::int8[] IS NULL OR app_id = ANY(\(appIDs)::int8[]))",
                logger: logger)
            for try await (appID, id) in rows.decode((Int64, Int64).self) { results.notifications.append((appID, id)) }
        }
        // A user's registered devices in every app searched (each app's `(app_id, user_alias)` index,
        // which holds registered devices only), then tokens starting with the text, registered or not.
        results.devices += try await devices(
            """
            SELECT \(unescaped: DeviceStore.columns) FROM devices
            WHERE user_alias = \(text) AND merged_into IS NULL AND unregistered_at IS NULL
              AND app_id = ANY(coalesce(\(appIDs)::int8[], ARRAY(SELECT id FROM apps)))
            ORDER BY id DESC LIMIT \(Self.maximumResults)
            """)
        if text.count >= 4 {
            results.devices += try await devices(
                """
                SELECT \(unescaped: DeviceStore.columns) FROM devices
                WHERE lower(token) LIKE \(Self.likePrefix(text.lowercased())) AND merged_into IS NULL
                  AND (\(appIDs)::int8[] IS NULL OR app_id = ANY(\(appIDs)::int8[]))
                ORDER BY lower(token) LIMIT \(Self.maximumResults)
                """)
        }
        var seen = Set<Int64>()
        results.devices = results.devices.filter { seen.insert($0.id).inserted }
        return results
    }

    /// One page of an app's devices, newest first, before `beforeID`.
    public func devices(appID: Int64, filter: DeviceListFilter, beforeID: Int64?, limit: Int) async throws -> [Device] {
        try await devices(
            """
            SELECT \(unescaped: DeviceStore.columns) FROM devices
            WHERE app_id = \(appID) AND merged_into IS NULL AND unregistered_at IS NULL
              AND id < coalesce(\(beforeID)::int8, 9223372036854775807)
              AND (\(filter.provider?.rawValue)::text IS NULL OR provider = \(filter.provider?.rawValue))
              AND (\(filter.language)::text IS NULL OR language = \(filter.language))
              AND (\(filter.country)::text IS NULL OR country = \(filter.country))
              AND (\(filter.tag)::text IS NULL OR tags @> ARRAY[\(filter.tag)::text])
              AND (\(filter.invalidated)::bool IS NULL OR (invalidated_at IS NOT NULL) = \(filter.invalidated))
            ORDER BY id DESC LIMIT \(limit)
            """)
    }

    /// Where a device last said it was (its `latitude` and `longitude` properties), when it did.
    public func location(deviceID: Int64) async throws -> (latitude: Double, longitude: Double)? {
        let rows = try await client.query(
            "SELECT latitude, longitude FROM devices WHERE id = \(deviceID) AND latitude IS NOT NULL AND longitude IS NOT NULL", logger: logger)
        for try await (latitude, longitude) in rows.decode((Double, Double).self) { return (latitude, longitude) }
        return nil
    }

    /// The other registered devices of a device's user in its app.
    public func otherDevices(of device: Device) async throws -> [Device] {
        guard let alias = device.userAlias else { return [] }
        return try await devices(
            """
            SELECT \(unescaped: DeviceStore.columns) FROM devices
            WHERE app_id = \(device.appID) AND user_alias = \(alias) AND id <> \(device.id) AND merged_into IS NULL AND unregistered_at IS NULL
            ORDER BY id DESC LIMIT \(Self.maximumResults)
            """)
    }

    /// `prefix` as a LIKE pattern matching what starts with it: its own `%`, `_` and `\` match themselves.
    static func likePrefix(_ prefix: String) -> String {
        prefix.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "_", with: "\\_") + "%"
    }

    private func devices(_ query: PostgresQuery) async throws -> [Device] {
        var devices: [Device] = []
        for try await row in try await client.query(query, logger: logger) { devices.append(try DeviceStore.device(from: row)) }
        return devices
    }
}
