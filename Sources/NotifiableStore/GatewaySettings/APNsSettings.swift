import Foundation
import NotifiableCore
import PostgresNIO

/// How one app reaches APNs.
public struct APNsSettings: Sendable, Equatable {
    public typealias Environment = APNsEnvironment

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

extension APNsSettings: GatewaySettings {
    package static let provider = Provider.apns
    package var secret: String { privateKeyPEM }

    package func upsert(appID: Int64, sealed: Data, masterKeyID: String) throws -> PostgresQuery {
        try """
        INSERT INTO apns_settings AS s (app_id, key_id, team_id, bundle_id, sealed_private_key, master_key_id, environment, endpoint, trusted_ca_pem)
        SELECT id, \(keyID), \(teamID), \(bundleID), \(sealed), \(masterKeyID), \(environment.rawValue), \(endpoint), \(trustedCAPEM)
        FROM apps WHERE id = \(appID)
        ON CONFLICT (app_id) DO UPDATE SET
            key_id = EXCLUDED.key_id, team_id = EXCLUDED.team_id, bundle_id = EXCLUDED.bundle_id,
            sealed_private_key = EXCLUDED.sealed_private_key, master_key_id = EXCLUDED.master_key_id, environment = EXCLUDED.environment,
            endpoint = EXCLUDED.endpoint, trusted_ca_pem = EXCLUDED.trusted_ca_pem,
            misconfigured_at = NULL, misconfiguration_reason = NULL, updated_at = now()
        RETURNING s.app_id
        """
    }

    package static func select(appID: Int64) -> PostgresQuery {
        """
        SELECT key_id, team_id, bundle_id, sealed_private_key, master_key_id, environment, endpoint, trusted_ca_pem,
               misconfiguration_reason, updated_at
        FROM apns_settings WHERE app_id = \(appID)
        """
    }

    package init(row: PostgresRow, secret: (Data, String?) throws -> String) throws {
        let (keyID, teamID, bundleID, sealed, masterKeyID, environment, endpoint, ca, misconfiguration, updatedAt) = try row.decode(
            (String, String, String, Data, String?, String, String?, String?, String?, Date).self
        )
        self.init(
            keyID: keyID, teamID: teamID, bundleID: bundleID, privateKeyPEM: try secret(sealed, masterKeyID),
            environment: Environment(rawValue: environment) ?? .production, endpoint: endpoint, trustedCAPEM: ca
        )
        misconfigurationReason = misconfiguration
        self.updatedAt = updatedAt
    }

    package static func selectSummary(appID: Int64) -> PostgresQuery {
        """
        SELECT key_id, team_id, bundle_id, environment, endpoint, misconfiguration_reason, updated_at, master_key_id
        FROM apns_settings WHERE app_id = \(appID)
        """
    }

    package static func summary(row: PostgresRow) throws -> APNsSettingsSummary {
        let (keyID, teamID, bundleID, environment, endpoint, misconfiguration, updatedAt, masterKeyID) = try row.decode(
            (String, String, String, String, String?, String?, Date, String?).self
        )
        let baseURL = APNsSettings(
            keyID: keyID, teamID: teamID, bundleID: bundleID, privateKeyPEM: "",
            environment: Environment(rawValue: environment) ?? .production, endpoint: endpoint
        ).baseURL
        return APNsSettingsSummary(
            keyID: keyID, teamID: teamID, bundleID: bundleID, environment: environment, baseURL: baseURL,
            misconfigurationReason: misconfiguration, updatedAt: updatedAt, masterKeyID: masterKeyID
        )
    }
}
