import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// What one committed import batch did to the app's devices.
public struct DeviceImportCounts: Sendable, Equatable, Codable {
    /// Tokens the app did not have.
    public var imported = 0
    /// Tokens the app had, left with the same user (or still anonymous).
    public var updated = 0
    /// Tokens the app had, moved to another user alias.
    public var reassigned = 0
    /// Tokens the app had under a user alias, now anonymous (the row gave no alias).
    public var anonymised = 0

    public init() {}

    public static func + (lhs: Self, rhs: Self) -> Self {
        var sum = lhs
        sum.imported += rhs.imported
        sum.updated += rhs.updated
        sum.reassigned += rhs.reassigned
        sum.anonymised += rhs.anonymised
        return sum
    }
}

/// Registers devices in bulk with the registration rules of `POST /api/v1/device_tokens`: one
/// `INSERT … ON CONFLICT` per batch instead of one round trip per device.
///
/// Fields a row does not give keep the values read at the statement's start; a registration of
/// the same token through the API committing during that statement may see those fields reset.
/// Imports are operator jobs, and the token and user alias (what targeting depends on) are
/// always the row's.
public struct DeviceImportStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Writes `devices` (registrations with a provider and a token) in one transaction. `beforeCommit`
    /// runs with the batch's counts and timestamp after the write and before the commit: the caller
    /// records there what it needs to find out, after a crash, whether the commit happened.
    public func write(
        appID: Int64, devices: [DeviceFields], beforeCommit: @Sendable (DeviceImportCounts, String) async throws -> Void
    ) async throws -> DeviceImportCounts {
        let batch = Self.lastPerToken(devices)
        return try await client.withTransaction(logger: logger) { connection in
            var at = ""
            for try await text in try await connection.query("SELECT now()::text", logger: logger).decode(String.self) { at = text }
            let counts = batch.isEmpty ? DeviceImportCounts() : try await Self.upsert(appID: appID, batch, on: connection, logger: logger)
            try await beforeCommit(counts, at)
            return counts
        }
    }

    /// Whether a batch whose transaction began at `at` committed: its rows carry that `updated_at`
    /// unless something changed them since.
    public func committed(appID: Int64, at: String) async throws -> Bool {
        let rows = try await client.query(
            "SELECT 1 FROM devices WHERE app_id = \(appID) AND updated_at = \(at)::timestamptz LIMIT 1", logger: logger
        )
        return try await rows.count() > 0
    }

    /// One row per token, compared case-insensitively, the last one winning: two rows of one
    /// statement may not touch the same device (`ON CONFLICT` refuses to affect a row twice).
    public static func lastPerToken(_ devices: [DeviceFields]) -> [DeviceFields] {
        var position: [String: Int] = [:]
        var kept: [DeviceFields] = []
        kept.reserveCapacity(devices.count)
        for device in devices {
            guard let token = device.token, device.provider != nil else { continue }
            if let index = position[token.lowercased()] {
                kept[index] = device
            } else {
                position[token.lowercased()] = kept.count
                kept.append(device)
            }
        }
        return kept
    }

    private static func upsert(appID: Int64, _ batch: [DeviceFields], on connection: PostgresConnection, logger: Logger) async throws -> DeviceImportCounts {
        let columns = ImportColumns(batch)
        // `previous` reads the rows as they were before this statement (every part of one
        // statement sees the same snapshot), so fields a row does not give keep their values and
        // each written row can be told new, updated, reassigned or anonymised. It is a lateral
        // lookup per input row on purpose: as `lower(token) IN (…)` the planner, misjudging an
        // unnest's size, chose a scan of all the app's devices per batch (358 ms per 1,000 rows
        // at 650k devices, against 3 ms through the token index). The app id reaches the lookup
        // through a sub-select so that the planner does not see its value: for an app newer than
        // the table's statistics it estimated one device, found the app id index as cheap as the
        // token index, and walked all the app's devices for every row (1,000 rows into a new app
        // beside 100,000 other devices took 10 s, the whole import growing with its square).
        let rows = try await connection.query(
            """
            WITH input AS (
                SELECT * FROM unnest(
                    \(columns.provider)::text[], \(columns.token)::text[],
                    \(columns.setsName)::bool[], \(columns.name)::text[], \(columns.userAlias)::text[],
                    \(columns.setsLanguage)::bool[], \(columns.language)::text[],
                    \(columns.setsCountry)::bool[], \(columns.country)::text[],
                    \(columns.setsCustom)::bool[], \(columns.custom)::text[], \(columns.platform)::text[],
                    \(columns.setsTags)::bool[], \(columns.tags)::text[], \(columns.pushKeys)::text[]
                ) AS i(provider, token, sets_name, name, user_alias, sets_language, language,
                       sets_country, country, sets_custom, custom, platform, sets_tags, tags, push_keys)
            ),
            previous AS (
                SELECT lower(i.token) AS key, d.* FROM input i CROSS JOIN LATERAL (
                    SELECT d.name, d.user_alias, d.language, d.country, d.custom_properties, d.tags FROM devices d
                    WHERE d.app_id = (SELECT \(appID)::int8) AND d.merged_into IS NULL AND lower(d.token) = lower(i.token)
                    LIMIT 1
                ) AS d
            ),
            written AS (
                INSERT INTO devices AS d (app_id, provider, token, name, user_alias, language, country,
                                          custom_properties, platform_properties, tags, push_keys)
                SELECT \(appID), i.provider, i.token,
                       CASE WHEN i.sets_name THEN NULLIF(i.name, '') ELSE p.name END,
                       NULLIF(i.user_alias, ''),
                       CASE WHEN i.sets_language THEN NULLIF(i.language, '') ELSE p.language END,
                       CASE WHEN i.sets_country THEN NULLIF(i.country, '') ELSE p.country END,
                       CASE WHEN i.sets_custom THEN i.custom::jsonb ELSE COALESCE(p.custom_properties, '{}') END,
                       i.platform::jsonb,
                       CASE WHEN i.sets_tags THEN string_to_array(i.tags, ' ') ELSE COALESCE(p.tags, '{}') END,
                       NULLIF(i.push_keys, '')::jsonb
                FROM input i LEFT JOIN previous p ON p.key = lower(i.token)
                ON CONFLICT (app_id, lower(token)) WHERE merged_into IS NULL DO UPDATE SET
                    provider = EXCLUDED.provider,
                    token = EXCLUDED.token,
                    name = EXCLUDED.name,
                    user_alias = EXCLUDED.user_alias,
                    language = EXCLUDED.language,
                    country = EXCLUDED.country,
                    custom_properties = EXCLUDED.custom_properties,
                    platform_properties = d.platform_properties || EXCLUDED.platform_properties,
                    tags = EXCLUDED.tags,
                    push_keys = COALESCE(EXCLUDED.push_keys, d.push_keys),
                    updated_at = now(),
                    registered_at = now(),
                    invalidated_at = NULL,
                    invalidation_reason = NULL,
                    unregistered_at = NULL
                RETURNING (d.xmax = 0) AS inserted, lower(d.token) AS key, d.user_alias
            )
            SELECT count(*) FILTER (WHERE w.inserted),
                   count(*) FILTER (WHERE NOT w.inserted AND w.user_alias IS NOT DISTINCT FROM p.user_alias),
                   count(*) FILTER (WHERE NOT w.inserted AND w.user_alias IS NOT NULL AND w.user_alias IS DISTINCT FROM p.user_alias),
                   count(*) FILTER (WHERE NOT w.inserted AND w.user_alias IS NULL AND p.user_alias IS NOT NULL)
            FROM written w LEFT JOIN previous p ON p.key = w.key
            """,
            logger: logger
        )
        var counts = DeviceImportCounts()
        for try await (imported, updated, reassigned, anonymised) in rows.decode((Int64, Int64, Int64, Int64).self) {
            counts.imported = Int(imported)
            counts.updated = Int(updated)
            counts.reassigned = Int(reassigned)
            counts.anonymised = Int(anonymised)
        }
        return counts
    }
}

/// A batch as one array per column. PostgreSQL arrays of optional text are awkward to bind, so
/// "no value" is the empty string (never a valid value of these columns) and each optional column
/// has a flag saying whether the row gives it at all.
private struct ImportColumns {
    var provider: [String] = [], token: [String] = []
    var setsName: [Bool] = [], name: [String] = [], userAlias: [String] = []
    var setsLanguage: [Bool] = [], language: [String] = []
    var setsCountry: [Bool] = [], country: [String] = []
    var setsCustom: [Bool] = [], custom: [String] = [], platform: [String] = []
    /// Space-separated: a tag holds no spaces.
    var setsTags: [Bool] = [], tags: [String] = []
    /// A browser subscription's keys as JSON; "" for none (the device keeps its own).
    var pushKeys: [String] = []

    init(_ batch: [DeviceFields]) {
        for device in batch {
            provider.append(device.provider?.rawValue ?? "")
            token.append(device.token ?? "")
            Self.add(device.name, &setsName, &name)
            var ignored: [Bool] = []
            // A registration without an alias anonymises, as the API does.
            Self.add(device.userAlias, &ignored, &userAlias)
            Self.add(device.language, &setsLanguage, &language)
            Self.add(device.country, &setsCountry, &country)
            switch device.customProperties {
            case .unchanged:
                setsCustom.append(false)
                custom.append("")
            case .set(let object):
                setsCustom.append(true)
                custom.append(JSONValue.object(object ?? [:]).jsonText())
            }
            platform.append(JSONValue.object(device.platformProperties).jsonText())
            pushKeys.append(device.pushKeys.map { JSONValue.object(["p256dh": .string($0.p256dh), "auth": .string($0.auth)]).jsonText() } ?? "")
            switch device.tags {
            case .unchanged:
                setsTags.append(false)
                tags.append("")
            case .set(let set):
                setsTags.append(true)
                tags.append((set ?? []).joined(separator: " "))
            }
        }
    }

    private static func add(_ update: FieldUpdate<String>, _ sets: inout [Bool], _ values: inout [String]) {
        switch update {
        case .unchanged:
            sets.append(false)
            values.append("")
        case .set(let value):
            sets.append(true)
            values.append(value ?? "")
        }
    }
}
