import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Apps (tenants) and their API credentials.
public struct AppStore: Sendable {
    public let client: Database
    let keys: MasterKeyring
    public let logger: Logger

    public init(client: Database, keys: MasterKeyring, logger: Logger) {
        self.client = client
        self.keys = keys
        self.logger = logger
    }

    /// A new app with its two credential pairs; the secrets are returned here and never again.
    public struct CreatedApp: Sendable {
        public let app: App
        public let deviceCredential: Credential
        public let serverCredential: Credential
    }

    /// A credential as the authentication check needs it.
    public struct StoredCredential: Sendable {
        public let appID: Int64
        public let role: CredentialRole
        public let secretKey: String
        /// The app's `require_verified_alias`, read with the credential so that checking a
        /// device's alias costs no further query.
        public let requiresVerifiedAlias: Bool
        /// When a rotated-out credential stops working; nil for a current one.
        public let expiresAt: Date?

        public init(appID: Int64, role: CredentialRole, secretKey: String, requiresVerifiedAlias: Bool, expiresAt: Date?) {
            self.appID = appID
            self.role = role
            self.secretKey = secretKey
            self.requiresVerifiedAlias = requiresVerifiedAlias
            self.expiresAt = expiresAt
        }
    }

    /// A credential as operators see it: never its secret.
    public struct CredentialSummary: Sendable, Equatable {
        public let accessID: String
        public let role: CredentialRole
        public let createdAt: Date
        /// When a rotated-out credential stops working; nil for the current one.
        public let expiresAt: Date?
    }

    /// The columns `apps(from:)` reads, in its order.
    static let columns = """
        id, name, delivery_mode, created_at, updated_at,
        android_style, default_ttl_seconds, default_mutable_content, default_content_available, retention_days,
        default_android_channel_id
        """

    public func create(name: String, deliveryMode: DeliveryMode = .live) async throws -> CreatedApp {
        try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO apps (name, delivery_mode) VALUES (\(name), \(deliveryMode.rawValue))
                RETURNING \(unescaped: Self.columns)
                """,
                logger: logger
            )
            guard let app = try await Self.apps(from: rows).first else {
                throw StoreError(description: "INSERT INTO apps returned no row")
            }
            let device = try await insertCredential(role: .device, appID: app.id, on: connection)
            let server = try await insertCredential(role: .server, appID: app.id, on: connection)
            return CreatedApp(app: app, deviceCredential: device, serverCredential: server)
        }
    }

    public func list() async throws -> [App] {
        try await Self.apps(
            from: client.query(
                "SELECT \(unescaped: Self.columns) FROM apps ORDER BY id", logger: logger
            ))
    }

    public func app(id: Int64) async throws -> App? {
        try await Self.apps(
            from: client.query(
                "SELECT \(unescaped: Self.columns) FROM apps WHERE id = \(id)", logger: logger
            )
        ).first
    }

    /// What an app's update may change; nil leaves a field as it is.
    public struct Changes: Sendable, Equatable {
        public var name: String?
        public var deliveryMode: DeliveryMode?
        public var androidStyle: AndroidStyle?
        public var timeToLiveSeconds: Int64?
        public var mutableContent: Bool?
        public var contentAvailable: Bool?
        /// `.some(nil)` gives the app the service's retention period again.
        public var retentionDays: Int??
        /// `.some(nil)` removes the app's default channel.
        public var androidChannelID: String??

        public init(
            name: String? = nil, deliveryMode: DeliveryMode? = nil, androidStyle: AndroidStyle? = nil, timeToLiveSeconds: Int64? = nil,
            mutableContent: Bool? = nil, contentAvailable: Bool? = nil, retentionDays: Int?? = nil, androidChannelID: String?? = nil
        ) {
            self.androidChannelID = androidChannelID
            self.name = name
            self.deliveryMode = deliveryMode
            self.androidStyle = androidStyle
            self.timeToLiveSeconds = timeToLiveSeconds
            self.mutableContent = mutableContent
            self.contentAvailable = contentAvailable
            self.retentionDays = retentionDays
        }
    }

    /// Renames the app, changes its delivery mode, push defaults and retention; nil when there is no such app.
    public func update(id: Int64, _ changes: Changes) async throws -> App? {
        try await Self.apps(
            from: client.query(
                """
                UPDATE apps SET name = COALESCE(\(changes.name), name),
                                delivery_mode = COALESCE(\(changes.deliveryMode?.rawValue), delivery_mode),
                                android_style = COALESCE(\(changes.androidStyle?.rawValue), android_style),
                                default_ttl_seconds = COALESCE(\(changes.timeToLiveSeconds)::int4, default_ttl_seconds),
                                default_mutable_content = COALESCE(\(changes.mutableContent), default_mutable_content),
                                default_content_available = COALESCE(\(changes.contentAvailable), default_content_available),
                                retention_days = CASE WHEN \(changes.retentionDays != nil)
                                                      THEN \(changes.retentionDays.flatMap { $0 }.map { Int32(clamping: $0) })::int4
                                                      ELSE retention_days END,
                                default_android_channel_id = CASE WHEN \(changes.androidChannelID != nil)
                                                                  THEN \(changes.androidChannelID.flatMap { $0 })::text
                                                                  ELSE default_android_channel_id END,
                                updated_at = now()
                WHERE id = \(id)
                RETURNING \(unescaped: Self.columns)
                """,
                logger: logger
            )
        ).first
    }

    /// Deletes the app with everything it owns: credentials, settings, devices, notifications,
    /// deliveries. False when there is no such app.
    public func delete(id: Int64) async throws -> Bool {
        // The cascade takes row locks across the app's deliveries and devices, which workers
        // recording outcomes (and their webhook events) may hold in another order: a deadlock
        // rolls one side back, so run the delete again.
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await client.query("DELETE FROM apps WHERE id = \(id) RETURNING id", logger: logger).count() > 0
            } catch let error as PSQLError where error.isDeadlock && attempt < 5 {
                try await Task.sleep(for: .milliseconds(50 * attempt))
            }
        }
    }

    /// The app's credentials that still work (current and within their grace period).
    public func credentials(appID: Int64) async throws -> [CredentialSummary] {
        let rows = try await client.query(
            """
            SELECT access_id, role, created_at, expires_at FROM app_credentials
            WHERE app_id = \(appID) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
            ORDER BY role, created_at DESC
            """,
            logger: logger
        )
        var summaries: [CredentialSummary] = []
        for try await (accessID, role, createdAt, expiresAt) in rows.decode((String, String, Date, Date?).self) {
            guard let role = CredentialRole(rawValue: role) else { continue }
            summaries.append(CredentialSummary(accessID: accessID, role: role, createdAt: createdAt, expiresAt: expiresAt))
        }
        return summaries
    }

    /// What a rotation made: the new pair, and until when the earlier ones keep working.
    public struct Rotation: Sendable {
        public let credential: Credential
        public let previous: [CredentialSummary]
    }

    /// A new credential pair for `role`; the app's earlier pairs of that role keep working for
    /// `grace` (so shipped apps keep working while a new build rolls out), then are refused.
    /// A grace already shorter than `grace` is not lengthened. Nil when there is no such app.
    public func rotate(appID: Int64, role: CredentialRole, grace: Duration) async throws -> Rotation? {
        let graceSeconds = grace.seconds
        return try await client.withTransaction(logger: logger) { connection -> Rotation? in
            // Locks the app, so two rotations at once queue up instead of interleaving.
            guard try await connection.query("SELECT id FROM apps WHERE id = \(appID) FOR UPDATE", logger: logger).count() > 0 else {
                return nil
            }
            let rows = try await connection.query(
                """
                UPDATE app_credentials
                SET expires_at = LEAST(COALESCE(expires_at, 'infinity'), now() + make_interval(secs => \(graceSeconds)))
                WHERE app_id = \(appID) AND role = \(role.rawValue) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
                RETURNING access_id, created_at, expires_at
                """,
                logger: logger
            )
            var previous: [CredentialSummary] = []
            for try await (accessID, createdAt, expiresAt) in rows.decode((String, Date, Date).self) {
                previous.append(CredentialSummary(accessID: accessID, role: role, createdAt: createdAt, expiresAt: expiresAt))
            }
            let credential = try await insertCredential(role: role, appID: appID, on: connection)
            return Rotation(credential: credential, previous: previous)
        }
    }

    /// Ends a credential now (e.g. a grace period that is no longer needed, or a leaked key).
    /// False when the app has no such working credential.
    public func revoke(appID: Int64, accessID: String) async throws -> Bool {
        try await client.query(
            """
            UPDATE app_credentials SET revoked_at = now()
            WHERE app_id = \(appID) AND access_id = \(accessID) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
            RETURNING access_id
            """,
            logger: logger
        ).count() > 0
    }

    /// The working credential with this access id, its secret opened; nil when unknown,
    /// revoked, or past its grace period.
    public func credential(accessID: String) async throws -> StoredCredential? {
        let rows = try await client.query(
            """
            SELECT c.app_id, c.role, c.sealed_secret, c.master_key_id, a.require_verified_alias, c.expires_at
            FROM app_credentials c JOIN apps a ON a.id = c.app_id
            WHERE c.access_id = \(accessID) AND c.revoked_at IS NULL AND (c.expires_at IS NULL OR c.expires_at > now())
            """,
            logger: logger
        )
        for try await (appID, role, sealed, keyID, requiresVerifiedAlias, expiresAt) in rows.decode((Int64, String, Data, String?, Bool, Date?).self) {
            guard let role = CredentialRole(rawValue: role) else { return nil }
            let secret = try keys.open(Array(sealed), keyID: keyID, boundTo: accessID)
            return StoredCredential(
                appID: appID, role: role, secretKey: secret, requiresVerifiedAlias: requiresVerifiedAlias, expiresAt: expiresAt
            )
        }
        return nil
    }

    private func insertCredential(role: CredentialRole, appID: Int64, on connection: PostgresConnection) async throws -> Credential {
        let credential = Credential.generate(role: role)
        let sealed = try keys.seal(credential.secretKey, boundTo: credential.accessID)
        try await connection.query(
            """
            INSERT INTO app_credentials (access_id, app_id, role, sealed_secret, master_key_id)
            VALUES (\(credential.accessID), \(appID), \(role.rawValue), \(Data(sealed.bytes)), \(sealed.keyID))
            """,
            logger: logger
        )
        return credential
    }

    static func apps(from rows: PostgresRowSequence) async throws -> [App] {
        var apps: [App] = []
        for try await (id, name, mode, createdAt, updatedAt, style, ttl, mutableContent, contentAvailable, retentionDays, channel) in rows.decode(
            (Int64, String, String, Date, Date, String, Int32, Bool, Bool, Int32?, String?).self
        ) {
            let defaults = PushDefaults(
                androidStyle: AndroidStyle(rawValue: style) ?? .data, timeToLiveSeconds: Int64(ttl),
                mutableContent: mutableContent, contentAvailable: contentAvailable, androidChannelID: channel
            )
            apps.append(
                App(
                    id: id, name: name, deliveryMode: DeliveryMode(rawValue: mode) ?? .live, pushDefaults: defaults,
                    retentionDays: retentionDays.map(Int.init), createdAt: createdAt, updatedAt: updatedAt
                ))
        }
        return apps
    }
}
