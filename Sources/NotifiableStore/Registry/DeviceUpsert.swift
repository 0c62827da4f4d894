import Logging
import NotifiableCore
import PostgresNIO

/// The registration upsert for one or many devices, as a named prepared statement: each pooled
/// connection parses and plans it once. The rows travel as one JSON array; each is inserted, or
/// updates the app's row with the same token in any case.
///
/// Which optional columns a registration sets is one set of flags for the whole statement
/// (`ON CONFLICT DO UPDATE` sees only the proposed row, not per-row inputs), so a batch holds
/// registrations that set the same columns. An SDK sends the same fields every time, so in
/// practice every registration of an app shares one set.
struct DeviceUpsert: PostgresPreparedStatement {
    typealias Row = Device

    static let name = "device_upsert_v4"

    static let sql = """
        INSERT INTO devices (app_id, provider, token, name, user_alias, language, country,
                             custom_properties, platform_properties, tags, platform, apns_environment, push_keys)
        SELECT r.app_id, r.provider, r.token, r.name, r.user_alias, r.language, r.country,
               COALESCE(r.custom_properties, '{}'), r.platform_properties,
               ARRAY(SELECT jsonb_array_elements_text(r.tags)), r.platform, r.apns_environment, r.push_keys
        FROM jsonb_to_recordset($1::jsonb) AS r(app_id int8, provider text, token text, name text, user_alias text,
                                                language text, country text, custom_properties jsonb,
                                                platform_properties jsonb, tags jsonb, platform text, apns_environment text,
                                                push_keys jsonb)
        ORDER BY r.app_id, lower(r.token)  -- one lock order for all batches, so two sharing tokens wait rather than deadlock
        ON CONFLICT (app_id, lower(token)) WHERE merged_into IS NULL DO UPDATE SET
            provider = EXCLUDED.provider,
            token = EXCLUDED.token,
            name = CASE WHEN $2 THEN EXCLUDED.name ELSE devices.name END,
            user_alias = CASE WHEN $3 THEN EXCLUDED.user_alias ELSE devices.user_alias END,
            language = CASE WHEN $4 THEN EXCLUDED.language ELSE devices.language END,
            country = CASE WHEN $5 THEN EXCLUDED.country ELSE devices.country END,
            custom_properties = CASE WHEN $6 THEN EXCLUDED.custom_properties ELSE devices.custom_properties END,
            platform_properties = devices.platform_properties || EXCLUDED.platform_properties,
            tags = CASE WHEN $7 THEN EXCLUDED.tags ELSE devices.tags END,
            platform = COALESCE(EXCLUDED.platform, devices.platform),
            apns_environment = COALESCE(EXCLUDED.apns_environment, devices.apns_environment),
            push_keys = COALESCE(EXCLUDED.push_keys, devices.push_keys),
            updated_at = now(),
            registered_at = now(),
            invalidated_at = NULL,
            invalidation_reason = NULL,
            unregistered_at = NULL
        RETURNING \(DeviceStore.columns)
        """

    /// Fixed rather than inferred from the first call's values.
    static let bindingDataTypes: [PostgresDataType] = [.text, .bool, .bool, .bool, .bool, .bool, .bool]

    let registrations: [Registration]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: Self.bindingDataTypes.count)
        bindings.append("[" + registrations.map(\.jsonRow).joined(separator: ",") + "]")
        for sets in registrations[0].columnsSet {
            bindings.append(sets)
        }
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Device {
        try DeviceStore.device(from: row)
    }

    /// The stored devices, from the named statement, or from the same SQL sent unnamed where a
    /// pooler in transaction mode may run each statement on another server connection (one that
    /// never prepared it).
    func run(on connection: PostgresConnection, prepared: Bool, logger: Logger) async throws -> [Device] {
        var devices: [Device] = []
        if prepared {
            for try await device in try await connection.execute(self, logger: logger) { devices.append(device) }
        } else {
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: Self.sql, binds: try makeBindings()), logger: logger) {
                devices.append(try decodeRow(row))
            }
        }
        return devices
    }
}

/// One registration as the upsert takes it.
struct Registration: Sendable {
    let appID: Int64
    let provider: Provider
    let token: String
    let binds: ColumnBinds
    /// Whether it sets name, user alias, language, country, custom properties and tags; compared
    /// for every waiting registration each time a batch forms, so worked out once.
    let columnsSet: [Bool]

    init(appID: Int64, provider: Provider, token: String, binds: ColumnBinds) {
        self.appID = appID
        self.provider = provider
        self.token = token
        self.binds = binds
        columnsSet = [binds.setsName, binds.setsUserAlias, binds.setsLanguage, binds.setsCountry, binds.setsCustomProperties, binds.setsTags]
    }

    /// Its row of the statement's JSON array.
    var jsonRow: String {
        var row = #"{"app_id":\#(appID),"provider":"\#(provider.rawValue)","token":"#
        row += JSONText.quoted(token)
        for (key, value) in [("name", binds.name), ("user_alias", binds.userAlias), ("language", binds.language), ("country", binds.country)] {
            row += #","\#(key)":"# + (value.map(JSONText.quoted) ?? "null")
        }
        row += #","custom_properties":"# + (binds.customProperties ?? "null")
        row += #","platform_properties":"# + binds.platformProperties
        row += #","platform":"# + (binds.platform.map(JSONText.quoted) ?? "null")
        row += #","apns_environment":"# + (binds.apnsEnvironment.map(JSONText.quoted) ?? "null")
        row += #","push_keys":"# + (binds.pushKeys ?? "null")
        row += #","tags":"# + (binds.tags.map { "[" + $0.map(JSONText.quoted).joined(separator: ",") + "]" } ?? "null")
        return row + "}"
    }
}
