import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// How one app reaches FCM's HTTP v1 API.
public struct FCMSettings: Sendable, Equatable {
    /// The service-account JSON as Google issues it (`project_id`, `client_email`,
    /// `private_key`, `token_uri`, …), in the clear: only in memory.
    public var serviceAccountJSON: String
    public var projectID: String
    public var clientEmail: String
    /// Overrides `https://fcm.googleapis.com`, e.g. `https://127.0.0.1:4443` for a test gateway.
    public var endpoint: String?
    /// A CA certificate (PEM) to trust for `endpoint` and the service account's `token_uri`.
    public var trustedCAPEM: String?
    public var misconfigurationReason: String?
    public var updatedAt: Date?

    public init(serviceAccountJSON: String, projectID: String, clientEmail: String, endpoint: String? = nil, trustedCAPEM: String? = nil) {
        self.serviceAccountJSON = serviceAccountJSON
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.endpoint = endpoint
        self.trustedCAPEM = trustedCAPEM
    }

    /// The base URL messages are sent to: `{baseURL}/v1/projects/{project_id}/messages:send`.
    public var baseURL: String { endpoint ?? "https://fcm.googleapis.com" }
}

/// Per-app FCM settings; the service account is stored sealed with the master key.
public struct FCMSettingsStore: Sendable {
    let client: PostgresClient
    let keys: MasterKeyring
    let logger: Logger

    public init(client: PostgresClient, keys: MasterKeyring, logger: Logger) {
        self.client = client
        self.keys = keys
        self.logger = logger
    }

    static func sealingContext(appID: Int64) -> String { "fcm:\(appID)" }

    /// Saves the app's settings, replacing earlier ones; clears any misconfiguration mark.
    /// False when there is no such app.
    public func save(_ settings: FCMSettings, appID: Int64) async throws -> Bool {
        let sealed = try keys.seal(settings.serviceAccountJSON, boundTo: Self.sealingContext(appID: appID))
        let rows = try await client.query(
            """
            INSERT INTO fcm_settings AS s (app_id, project_id, client_email, sealed_service_account, master_key_id, endpoint, trusted_ca_pem)
            SELECT id, \(settings.projectID), \(settings.clientEmail), \(Data(sealed.bytes)), \(sealed.keyID), \(settings.endpoint), \(settings.trustedCAPEM)
            FROM apps WHERE id = \(appID)
            ON CONFLICT (app_id) DO UPDATE SET
                project_id = EXCLUDED.project_id, client_email = EXCLUDED.client_email,
                sealed_service_account = EXCLUDED.sealed_service_account, master_key_id = EXCLUDED.master_key_id,
                endpoint = EXCLUDED.endpoint, trusted_ca_pem = EXCLUDED.trusted_ca_pem,
                misconfigured_at = NULL, misconfiguration_reason = NULL, updated_at = now()
            RETURNING s.app_id
            """,
            logger: logger
        )
        return try await rows.count() > 0
    }

    public func settings(appID: Int64) async throws -> FCMSettings? {
        let rows = try await client.query(
            """
            SELECT project_id, client_email, sealed_service_account, master_key_id, endpoint, trusted_ca_pem, misconfiguration_reason, updated_at
            FROM fcm_settings WHERE app_id = \(appID)
            """,
            logger: logger
        )
        for try await (projectID, clientEmail, sealed, masterKeyID, endpoint, ca, misconfiguration, updatedAt) in rows.decode(
            (String, String, Data, String?, String?, String?, String?, Date).self
        ) {
            var settings = FCMSettings(
                serviceAccountJSON: try keys.open(Array(sealed), keyID: masterKeyID, boundTo: Self.sealingContext(appID: appID)),
                projectID: projectID, clientEmail: clientEmail, endpoint: endpoint, trustedCAPEM: ca
            )
            settings.misconfigurationReason = misconfiguration
            settings.updatedAt = updatedAt
            return settings
        }
        return nil
    }

    /// Removes the app's settings; false when it had none.
    public func remove(appID: Int64) async throws -> Bool {
        try await GatewaySettingsTable.fcm.remove(appID: appID, client: client, logger: logger)
    }

    /// Records that FCM refused the app's configuration itself, so sending stops and operators
    /// see why. The mark stays until the settings are saved again. Only the settings saved at
    /// `settingsVersion` (their `updated_at`) are marked: settings saved since were not refused.
    /// True when this call set the mark.
    @discardableResult
    public func markMisconfigured(appID: Int64, reason: String, settingsVersion: Date) async throws -> Bool {
        try await GatewaySettingsTable.fcm.markMisconfigured(
            appID: appID, reason: reason, settingsVersion: settingsVersion, client: client, logger: logger
        )
    }
}
