import Foundation
import PostgresNIO

/// An app's APNs settings as operators read them: everything but the key, which is not even
/// opened (so the view works while a master key is missing, and no key sits in memory for it).
public struct APNsSettingsSummary: Sendable, Equatable {
    public let keyID: String
    public let teamID: String
    public let bundleID: String
    public let environment: String
    public let baseURL: String
    public let misconfigurationReason: String?
    public let updatedAt: Date
    /// The id of the master key that sealed the key (nil: sealed before ids were recorded).
    public let masterKeyID: String?
}

/// An app's FCM settings as operators read them: which service account, never its key.
public struct FCMSettingsSummary: Sendable, Equatable {
    public let projectID: String
    public let clientEmail: String
    public let baseURL: String
    public let misconfigurationReason: String?
    public let updatedAt: Date
    public let masterKeyID: String?
}

extension APNsSettingsStore {
    public func summary(appID: Int64) async throws -> APNsSettingsSummary? {
        let rows = try await client.query(
            """
            SELECT key_id, team_id, bundle_id, environment, endpoint, misconfiguration_reason, updated_at, master_key_id
            FROM apns_settings WHERE app_id = \(appID)
            """,
            logger: logger
        )
        for try await (keyID, teamID, bundleID, environment, endpoint, misconfiguration, updatedAt, masterKeyID) in rows.decode(
            (String, String, String, String, String?, String?, Date, String?).self
        ) {
            let baseURL = APNsSettings(
                keyID: keyID, teamID: teamID, bundleID: bundleID, privateKeyPEM: "",
                environment: APNsSettings.Environment(rawValue: environment) ?? .production, endpoint: endpoint
            ).baseURL
            return APNsSettingsSummary(
                keyID: keyID, teamID: teamID, bundleID: bundleID, environment: environment, baseURL: baseURL,
                misconfigurationReason: misconfiguration, updatedAt: updatedAt, masterKeyID: masterKeyID
            )
        }
        return nil
    }
}

extension FCMSettingsStore {
    public func summary(appID: Int64) async throws -> FCMSettingsSummary? {
        let rows = try await client.query(
            """
            SELECT project_id, client_email, endpoint, misconfiguration_reason, updated_at, master_key_id
            FROM fcm_settings WHERE app_id = \(appID)
            """,
            logger: logger
        )
        for try await (projectID, clientEmail, endpoint, misconfiguration, updatedAt, masterKeyID) in rows.decode(
            (String, String, String?, String?, Date, String?).self
        ) {
            return FCMSettingsSummary(
                projectID: projectID, clientEmail: clientEmail,
                baseURL: FCMSettings(serviceAccountJSON: "", projectID: projectID, clientEmail: clientEmail, endpoint: endpoint).baseURL,
                misconfigurationReason: misconfiguration, updatedAt: updatedAt, masterKeyID: masterKeyID
            )
        }
        return nil
    }
}
