import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// How one app reaches APNs.
public struct APNsSettings: Sendable, Equatable {
    public enum Environment: String, Sendable, CaseIterable {
        case production
        case sandbox
    }

    public var keyID: String
    public var teamID: String
    public var bundleID: String
    /// The `.p8` key (PKCS#8 PEM), in the clear: only in memory.
    public var privateKeyPEM: String
    public var environment: Environment
    /// Overrides the environment's host, e.g. `https://127.0.0.1:2197` for a test gateway.
    public var endpoint: String?
    /// A CA certificate (PEM) to trust for `endpoint`.
    public var trustedCAPEM: String?
    public var misconfigurationReason: String?
    public var updatedAt: Date?

    public init(
        keyID: String, teamID: String, bundleID: String, privateKeyPEM: String, environment: Environment,
        endpoint: String? = nil, trustedCAPEM: String? = nil
    ) {
        self.keyID = keyID
        self.teamID = teamID
        self.bundleID = bundleID
        self.privateKeyPEM = privateKeyPEM
        self.environment = environment
        self.endpoint = endpoint
        self.trustedCAPEM = trustedCAPEM
    }

    /// The base URL pushes are sent to.
    public var baseURL: String {
        endpoint ?? (environment == .production ? "https://api.push.apple.com" : "https://api.sandbox.push.apple.com")
    }
}

/// Per-app APNs settings; the key is stored sealed with the master key.
public struct APNsSettingsStore: Sendable {
    let client: PostgresClient
    let keys: MasterKeyring
    let logger: Logger

    public init(client: PostgresClient, keys: MasterKeyring, logger: Logger) {
        self.client = client
        self.keys = keys
        self.logger = logger
    }

    static func sealingContext(appID: Int64) -> String { "apns:\(appID)" }

    /// Saves the app's settings, replacing earlier ones; clears any misconfiguration mark.
    /// False when there is no such app.
    public func save(_ settings: APNsSettings, appID: Int64) async throws -> Bool {
        let sealed = try keys.seal(settings.privateKeyPEM, boundTo: Self.sealingContext(appID: appID))
        let rows = try await client.query(
            """
            INSERT INTO apns_settings AS s (app_id, key_id, team_id, bundle_id, sealed_private_key, master_key_id, environment, endpoint, trusted_ca_pem)
            SELECT id, \(settings.keyID), \(settings.teamID), \(settings.bundleID), \(Data(sealed.bytes)), \(sealed.keyID), \(settings.environment.rawValue),
                   \(settings.endpoint), \(settings.trustedCAPEM)
            FROM apps WHERE id = \(appID)
            ON CONFLICT (app_id) DO UPDATE SET
                key_id = EXCLUDED.key_id, team_id = EXCLUDED.team_id, bundle_id = EXCLUDED.bundle_id,
                sealed_private_key = EXCLUDED.sealed_private_key, master_key_id = EXCLUDED.master_key_id, environment = EXCLUDED.environment,
                endpoint = EXCLUDED.endpoint, trusted_ca_pem = EXCLUDED.trusted_ca_pem,
                misconfigured_at = NULL, misconfiguration_reason = NULL, updated_at = now()
            RETURNING s.app_id
            """,
            logger: logger
        )
        return try await rows.count() > 0
    }

    public func settings(appID: Int64) async throws -> APNsSettings? {
        let rows = try await client.query(
            """
            SELECT key_id, team_id, bundle_id, sealed_private_key, master_key_id, environment, endpoint, trusted_ca_pem,
                   misconfiguration_reason, updated_at
            FROM apns_settings WHERE app_id = \(appID)
            """,
            logger: logger
        )
        for try await (keyID, teamID, bundleID, sealed, masterKeyID, environment, endpoint, ca, misconfiguration, updatedAt) in rows.decode(
            (String, String, String, Data, String?, String, String?, String?, String?, Date).self
        ) {
            var settings = APNsSettings(
                keyID: keyID, teamID: teamID, bundleID: bundleID,
                privateKeyPEM: try keys.open(Array(sealed), keyID: masterKeyID, boundTo: Self.sealingContext(appID: appID)),
                environment: APNsSettings.Environment(rawValue: environment) ?? .production,
                endpoint: endpoint, trustedCAPEM: ca
            )
            settings.misconfigurationReason = misconfiguration
            settings.updatedAt = updatedAt
            return settings
        }
        return nil
    }

    /// Removes the app's settings; false when it had none.
    public func remove(appID: Int64) async throws -> Bool {
        try await GatewaySettingsTable.apns.remove(appID: appID, client: client, logger: logger)
    }

    /// Records that APNs refused the app's configuration itself, so sending stops and operators
    /// see why. The mark stays until the settings are saved again. Only the settings saved at
    /// `settingsVersion` (their `updated_at`) are marked: settings saved since were not refused.
    /// True when this call set the mark.
    @discardableResult
    public func markMisconfigured(appID: Int64, reason: String, settingsVersion: Date) async throws -> Bool {
        try await GatewaySettingsTable.apns.markMisconfigured(
            appID: appID, reason: reason, settingsVersion: settingsVersion, client: client, logger: logger
        )
    }
}
