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
    /// The host of the sandbox environment, for devices on debug builds when the app's own
    /// environment is production (a test or private gateway; Apple's sandbox host otherwise).
    public var sandboxEndpoint: String?
    /// A CA certificate (PEM) to trust for `endpoint` and `sandboxEndpoint`.
    public var trustedCAPEM: String?
    public var misconfigurationReason: String?
    public var updatedAt: Date?

    public init(
        keyID: String, teamID: String, bundleID: String, privateKeyPEM: String, environment: Environment,
        endpoint: String? = nil, trustedCAPEM: String? = nil, sandboxEndpoint: String? = nil
    ) {
        self.sandboxEndpoint = sandboxEndpoint
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
        endpoint ?? (environment == .sandbox ? sandboxEndpoint : nil) ?? Self.appleBaseURL(environment)
    }

    /// The base URL of the environment the app's settings do not name, for devices that say their
    /// token is of it and for a token the app's host does not know; nil when it cannot be reached
    /// with these settings. `sandboxEndpoint` names the sandbox host; Apple's host of the other
    /// environment serves only an app that uses Apple's host itself (a proxy or private gateway
    /// trusts its own CA, which Apple's host would fail).
    public var otherBaseURL: String? {
        let other = environment.other
        if other == .sandbox, let sandboxEndpoint { return sandboxEndpoint }
        return baseURL == Self.appleBaseURL(environment) ? Self.appleBaseURL(other) : nil
    }

    /// The base URL of `environment`, nil when these settings cannot reach it.
    public func baseURL(for environment: Environment) -> String? {
        environment == self.environment ? baseURL : otherBaseURL
    }

    /// The base URL of Apple's channel management API for broadcast channels (iOS 18), in the
    /// app's environment: Apple's own host and port, or the app's endpoint when it names a test or
    /// private gateway, which then serves both (docs/compatibility.md §12, *Broadcast channels*).
    public var channelManagementBaseURL: String {
        guard baseURL == Self.appleBaseURL(environment) else { return baseURL }
        return environment == .production
            ? "https://api-manage-broadcast.push.apple.com:2196" : "https://api-manage-broadcast.sandbox.push.apple.com:2195"
    }

    static func appleBaseURL(_ environment: Environment) -> String {
        environment == .production ? "https://api.push.apple.com" : "https://api.sandbox.push.apple.com"
    }
}

extension APNsSettings: GatewaySettings {
    package static let provider = Provider.apns
    package var secret: String { privateKeyPEM }

    package func upsert(appID: Int64, sealed: Data, masterKeyID: String) throws -> PostgresQuery {
        try """
        INSERT INTO apns_settings AS s (app_id, key_id, team_id, bundle_id, sealed_private_key, master_key_id, environment, endpoint, trusted_ca_pem,
                                        sandbox_endpoint)
        SELECT id, \(keyID), \(teamID), \(bundleID), \(sealed), \(masterKeyID), \(environment.rawValue), \(endpoint), \(trustedCAPEM),
               \(sandboxEndpoint)
        FROM apps WHERE id = \(appID)
        ON CONFLICT (app_id) DO UPDATE SET
            key_id = EXCLUDED.key_id, team_id = EXCLUDED.team_id, bundle_id = EXCLUDED.bundle_id,
            sealed_private_key = EXCLUDED.sealed_private_key, master_key_id = EXCLUDED.master_key_id, environment = EXCLUDED.environment,
            endpoint = EXCLUDED.endpoint, trusted_ca_pem = EXCLUDED.trusted_ca_pem, sandbox_endpoint = EXCLUDED.sandbox_endpoint,
            misconfigured_at = NULL, misconfiguration_reason = NULL, updated_at = now()
        RETURNING s.app_id
        """
    }

    package static func select(appID: Int64) -> PostgresQuery {
        """
        SELECT key_id, team_id, bundle_id, sealed_private_key, master_key_id, environment, endpoint, trusted_ca_pem,
               misconfiguration_reason, updated_at, sandbox_endpoint
        FROM apns_settings WHERE app_id = \(appID)
        """
    }

    package init(row: PostgresRow, secret: (Data, String?) throws -> String) throws {
        let (keyID, teamID, bundleID, sealed, masterKeyID, environment, endpoint, ca, misconfiguration, updatedAt, sandboxEndpoint) = try row.decode(
            (String, String, String, Data, String?, String, String?, String?, String?, Date, String?).self
        )
        self.init(
            keyID: keyID, teamID: teamID, bundleID: bundleID, privateKeyPEM: try secret(sealed, masterKeyID),
            environment: Environment(rawValue: environment) ?? .production, endpoint: endpoint, trustedCAPEM: ca, sandboxEndpoint: sandboxEndpoint
        )
        misconfigurationReason = misconfiguration
        self.updatedAt = updatedAt
    }

    package static func selectSummary(appID: Int64) -> PostgresQuery {
        """
        SELECT key_id, team_id, bundle_id, environment, endpoint, misconfiguration_reason, updated_at, master_key_id, sandbox_endpoint
        FROM apns_settings WHERE app_id = \(appID)
        """
    }

    package static func summary(row: PostgresRow) throws -> APNsSettingsSummary {
        let (keyID, teamID, bundleID, environment, endpoint, misconfiguration, updatedAt, masterKeyID, sandboxEndpoint) = try row.decode(
            (String, String, String, String, String?, String?, Date, String?, String?).self
        )
        let settings = APNsSettings(
            keyID: keyID, teamID: teamID, bundleID: bundleID, privateKeyPEM: "",
            environment: Environment(rawValue: environment) ?? .production, endpoint: endpoint, sandboxEndpoint: sandboxEndpoint
        )
        return APNsSettingsSummary(
            keyID: keyID, teamID: teamID, bundleID: bundleID, environment: environment, baseURL: settings.baseURL,
            sandboxBaseURL: settings.baseURL(for: .sandbox),
            misconfigurationReason: misconfiguration, updatedAt: updatedAt, masterKeyID: masterKeyID
        )
    }
}
