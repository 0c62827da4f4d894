import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// The devices of each app. Every query is scoped by app id: one app's credentials can never
/// reach another app's devices.
public struct DeviceStore: Sendable {
    let client: Database
    let logger: Logger
    private let registrations: RegistrationBatcher

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
        self.registrations = RegistrationBatcher(client: client, logger: logger)
    }

    static let columns = """
        id, app_id, provider, token, name, user_alias, language, country,
        custom_properties::text, platform_properties::text,
        created_at, updated_at, registered_at, invalidated_at, unregistered_at, tags, platform, apns_environment, badge
        """

    /// Registers a token, re-using its row when the app already has it (in any case): the row
    /// moves to the alias sent (or becomes anonymous), is revived if it was unregistered or
    /// invalidated, and counts as freshly registered.
    public func register(appID: Int64, fields: DeviceFields) async throws -> Device {
        guard let provider = fields.provider, let token = fields.token else {
            throw StoreError(description: "register needs a provider and a token")
        }
        return try await registrations.register(Registration(appID: appID, provider: provider, token: token, binds: ColumnBinds(fields)))
    }

    /// A registered (not unregistered) device of the app; nil otherwise.
    /// The provider of the app's device that holds `token` (in any case); nil when none does.
    public func provider(ofToken token: String, appID: Int64) async throws -> Provider? {
        let rows = try await client.query(
            "SELECT provider FROM devices WHERE app_id = \(appID) AND lower(token) = lower(\(token)) AND merged_into IS NULL",
            logger: logger
        )
        for try await provider in rows.decode(String.self) { return Provider(rawValue: provider) }
        return nil
    }

    public func device(id: Int64, appID: Int64) async throws -> Device? {
        try await Self.first(
            client.query(
                """
                SELECT \(unescaped: Self.columns) FROM devices
                WHERE id = \(id) AND app_id = \(appID) AND unregistered_at IS NULL
                """,
                logger: logger
            ))
    }

    /// Applies a partial update; nil when the app has no such registered device.
    ///
    /// Moving a device to a token that another row of the app holds merges the two: the row
    /// being updated survives (the SDK holds its id) and the other row is removed, so the
    /// token is reached through one device only.
    public func update(id: Int64, appID: Int64, fields: DeviceFields) async throws -> Device? {
        // A registration of the same token committing meanwhile, or two devices swapping tokens.
        try await retryingConflicts { try await updateOnce(id: id, appID: appID, fields: fields) }
    }

    private func updateOnce(id: Int64, appID: Int64, fields: DeviceFields) async throws -> Device? {
        let binds = ColumnBinds(fields)
        return try await client.withTransaction(logger: logger) { connection in
            let locked = try await Self.first(
                connection.query(
                    """
                    SELECT \(unescaped: Self.columns) FROM devices
                    WHERE id = \(id) AND app_id = \(appID) AND unregistered_at IS NULL
                    FOR UPDATE
                    """,
                    logger: logger
                ))
            guard let current = locked else { return nil }

            var newToken: String?
            if let token = fields.token, token.lowercased() != current.token.lowercased() {
                newToken = token
                try await Self.merge(tokenHolderOf: token, into: id, appID: appID, on: connection, logger: logger)
            } else if let token = fields.token, token != current.token {
                newToken = token  // same token, new spelling
            }

            return try await Self.first(
                connection.query(
                    """
                    UPDATE devices SET
                        token = COALESCE(\(newToken)::text, token),
                        name = CASE WHEN \(binds.setsName) THEN \(binds.name) ELSE name END,
                        user_alias = CASE WHEN \(binds.setsUserAlias) THEN \(binds.userAlias) ELSE user_alias END,
                        language = CASE WHEN \(binds.setsLanguage) THEN \(binds.language) ELSE language END,
                        country = CASE WHEN \(binds.setsCountry) THEN \(binds.country) ELSE country END,
                        custom_properties = CASE WHEN \(binds.setsCustomProperties) THEN \(binds.customProperties)::jsonb
                                                 ELSE custom_properties END,
                        platform_properties = platform_properties || \(binds.platformProperties)::jsonb,
                        platform = COALESCE(\(binds.platform)::text, platform),
                        apns_environment = COALESCE(\(binds.apnsEnvironment)::text, apns_environment),
                        badge = COALESCE(\(binds.badge)::int4, badge),
                        push_keys = COALESCE(\(binds.pushKeys)::jsonb, push_keys),
                        tags = CASE WHEN \(binds.setsTags) THEN \(binds.tags)::text[] ELSE tags END,
                        updated_at = now(),
                        registered_at = CASE WHEN \(newToken)::text IS NULL THEN registered_at ELSE now() END,
                        invalidated_at = CASE WHEN \(newToken)::text IS NULL THEN invalidated_at END,
                        invalidation_reason = CASE WHEN \(newToken)::text IS NULL THEN invalidation_reason END
                    WHERE id = \(id)
                    RETURNING \(unescaped: Self.columns)
                    """,
                    logger: logger
                ))
        }
    }

    /// Retires the row of the app that holds `token` (other than `survivorID`): it gives up the
    /// token, is unregistered, its Live Activity tokens and pending deliveries move to the survivor
    /// where the survivor has none for that activity or notification, and its pending deliveries
    /// are cancelled otherwise, so the token is pushed once.
    private static func merge(
        tokenHolderOf token: String, into survivorID: Int64, appID: Int64, on connection: PostgresConnection, logger: Logger
    ) async throws {
        // The app id goes in through a sub-select, as in DeviceImportStore: given the value, the planner
        // estimates an app newer than the table's statistics at one device, takes the app-id index
        // and filters every device of the app by token; blind to it, it takes the token index.
        let merged = try await connection.query(
            """
            UPDATE devices SET merged_into = \(survivorID), unregistered_at = COALESCE(unregistered_at, now()), updated_at = now()
            WHERE app_id = (SELECT \(appID)::int8) AND lower(token) = lower(\(token)) AND id <> \(survivorID) AND merged_into IS NULL
            RETURNING id
            """,
            logger: logger
        )
        for try await mergedID in merged.decode(Int64.self) {
            try await MergedActivityTokens.move(from: mergedID, to: survivorID, on: connection, logger: logger)
            try await MergedDeliveries.move(from: mergedID, to: survivorID, on: connection, logger: logger)
            try await WaitingDeliveries.cancel(
                of: .device(mergedID), reason: "device merged into \(survivorID)", on: connection, logger: logger
            )
            logger.info(
                "merged device into the one taking its token",
                metadata: [
                    "app_id": "\(appID)", "device_id": "\(survivorID)", "merged_device_id": "\(mergedID)",
                ])
        }
    }

    /// Unregisters a device: it is never targeted again, but its row (and so its delivery
    /// history) stays. False when the app has no such registered device.
    public func unregister(id: Int64, appID: Int64) async throws -> Bool {
        try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE devices SET unregistered_at = now(), updated_at = now()
                WHERE id = \(id) AND app_id = \(appID) AND unregistered_at IS NULL
                RETURNING id
                """,
                logger: logger
            )
            guard try await rows.count() > 0 else { return false }
            try await WaitingDeliveries.cancel(of: .device(id), reason: "device unregistered", on: connection, logger: logger)
            return true
        }
    }

    /// A user's registered devices, oldest first.
    public func devices(userAlias: String, appID: Int64) async throws -> [Device] {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.columns) FROM devices
            WHERE app_id = \(appID) AND user_alias = \(userAlias) AND unregistered_at IS NULL
            ORDER BY id
            """,
            logger: logger
        )
        var devices: [Device] = []
        for try await row in rows { devices.append(try Self.device(from: row)) }
        return devices
    }

    static func first(_ rows: PostgresRowSequence) async throws -> Device? {
        for try await row in rows { return try device(from: row) }
        return nil
    }

    static func device(from row: PostgresRow) throws -> Device {
        let (
            id, appID, provider, token, name, userAlias, language, country, custom, platform,
            createdAt, updatedAt, registeredAt, invalidatedAt, unregisteredAt, tags, devicePlatform, apnsEnvironment, badge
        ) = try row.decode(
            (
                Int64, Int64, String, String, String?, String?, String?, String?, String, String,
                Date, Date, Date, Date?, Date?, [String], String?, String?, Int32
            ).self
        )
        guard let provider = Provider(rawValue: provider) else {
            throw StoreError(description: "device \(id) has unknown provider \(provider)")
        }
        return Device(
            id: id, appID: appID, provider: provider, token: token, name: name, userAlias: userAlias,
            language: language, country: country,
            customProperties: try JSONValue.decode(Array(custom.utf8)).objectValue ?? [:],
            platformProperties: try JSONValue.decode(Array(platform.utf8)).objectValue ?? [:],
            createdAt: createdAt, updatedAt: updatedAt, registeredAt: registeredAt,
            invalidatedAt: invalidatedAt, unregisteredAt: unregisteredAt, tags: tags,
            platform: devicePlatform.flatMap(DevicePlatform.init(rawValue:)),
            apnsEnvironment: apnsEnvironment.flatMap(APNsEnvironment.init(rawValue:)), badge: Int(badge)
        )
    }
}

/// DeviceFields as bind values: for each optional column whether to set it, and to what.
struct ColumnBinds {
    let setsName: Bool, name: String?
    let setsUserAlias: Bool, userAlias: String?
    let setsLanguage: Bool, language: String?
    let setsCountry: Bool, country: String?
    let setsCustomProperties: Bool, customProperties: String?
    let setsTags: Bool, tags: [String]?
    let platformProperties: String
    /// Set when sent; a registration without them keeps the device's.
    let platform: String?, apnsEnvironment: String?
    let badge: Int32?
    /// A browser subscription's keys as JSON; set when sent, else the device keeps its own.
    let pushKeys: String?

    init(_ fields: DeviceFields) {
        badge = fields.badge.map { Int32($0) }
        pushKeys = fields.pushKeys.map { JSONValue.object(["p256dh": .string($0.p256dh), "auth": .string($0.auth)]).jsonText() }
        platform = fields.platform?.rawValue
        apnsEnvironment = fields.apnsEnvironment?.rawValue
        (setsName, name) = Self.split(fields.name)
        (setsUserAlias, userAlias) = Self.split(fields.userAlias)
        (setsLanguage, language) = Self.split(fields.language)
        (setsCountry, country) = Self.split(fields.country)
        let (setsCustom, custom) = Self.split(fields.customProperties)
        setsCustomProperties = setsCustom
        customProperties = setsCustom ? JSONValue.object(custom ?? [:]).jsonText() : nil
        let (setsTags, tags) = Self.split(fields.tags)
        self.setsTags = setsTags
        self.tags = setsTags ? tags ?? [] : nil
        platformProperties = JSONValue.object(fields.platformProperties).jsonText()
    }

    private static func split<Value>(_ update: FieldUpdate<Value>) -> (Bool, Value?) {
        switch update {
        case .unchanged: (false, nil)
        case .set(let value): (true, value)
        }
    }
}

extension DeviceStore {
    /// A Web Push device's subscription keys; nil when it has none (or is no such device).
    public func pushKeys(deviceID: Int64) async throws -> WebPushKeys? {
        let rows = try await client.query(
            "SELECT push_keys ->> 'p256dh', push_keys ->> 'auth' FROM devices WHERE id = \(deviceID)", logger: logger)
        for try await (p256dh, auth) in rows.decode((String?, String?).self) {
            guard let p256dh, let auth else { return nil }
            return WebPushKeys(p256dh: p256dh, auth: auth)
        }
        return nil
    }
}
