import Foundation
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

extension FCMSettings: GatewaySettings {
    package static let provider = Provider.fcm
    package var secret: String { serviceAccountJSON }

    package func upsert(appID: Int64, sealed: Data, masterKeyID: String) throws -> PostgresQuery {
        try """
        INSERT INTO fcm_settings AS s (app_id, project_id, client_email, sealed_service_account, master_key_id, endpoint, trusted_ca_pem)
        SELECT id, \(projectID), \(clientEmail), \(sealed), \(masterKeyID), \(endpoint), \(trustedCAPEM)
        FROM apps WHERE id = \(appID)
        ON CONFLICT (app_id) DO UPDATE SET
            project_id = EXCLUDED.project_id, client_email = EXCLUDED.client_email,
            sealed_service_account = EXCLUDED.sealed_service_account, master_key_id = EXCLUDED.master_key_id,
            endpoint = EXCLUDED.endpoint, trusted_ca_pem = EXCLUDED.trusted_ca_pem,
            misconfigured_at = NULL, misconfiguration_reason = NULL, updated_at = now()
        RETURNING s.app_id
        """
    }

    package static func select(appID: Int64) -> PostgresQuery {
        """
        SELECT project_id, client_email, sealed_service_account, master_key_id, endpoint, trusted_ca_pem, misconfiguration_reason, updated_at
        FROM fcm_settings WHERE app_id = \(appID)
        """
    }

    package init(row: PostgresRow, secret: (Data, String?) throws -> String) throws {
        let (projectID, clientEmail, sealed, masterKeyID, endpoint, ca, misconfiguration, updatedAt) = try row.decode(
            (String, String, Data, String?, String?, String?, String?, Date).self
        )
        self.init(
            serviceAccountJSON: try secret(sealed, masterKeyID), projectID: projectID, clientEmail: clientEmail, endpoint: endpoint,
            trustedCAPEM: ca
        )
        misconfigurationReason = misconfiguration
        self.updatedAt = updatedAt
    }

    package static func selectSummary(appID: Int64) -> PostgresQuery {
        """
        SELECT project_id, client_email, endpoint, misconfiguration_reason, updated_at, master_key_id
        FROM fcm_settings WHERE app_id = \(appID)
        """
    }

    package static func summary(row: PostgresRow) throws -> FCMSettingsSummary {
        let (projectID, clientEmail, endpoint, misconfiguration, updatedAt, masterKeyID) = try row.decode(
            (String, String, String?, String?, Date, String?).self
        )
        return FCMSettingsSummary(
            projectID: projectID, clientEmail: clientEmail,
            baseURL: FCMSettings(serviceAccountJSON: "", projectID: projectID, clientEmail: clientEmail, endpoint: endpoint).baseURL,
            misconfigurationReason: misconfiguration, updatedAt: updatedAt, masterKeyID: masterKeyID
        )
    }
}
