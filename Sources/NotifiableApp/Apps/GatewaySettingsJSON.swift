import Foundation
import NotifiableStore

/// An app's APNs settings as operators read them back: everything but the key, and which
/// master key sealed it.
struct APNsSettingsJSON: Encodable, Sendable {
    let keyID: String
    let teamID: String
    let bundleID: String
    let environment: String
    let endpoint: String
    let sandboxEndpoint: String?
    let privateKey = "[redacted]"
    let misconfiguration: String?
    let updatedAt: String
    let masterKeyID: String?

    enum CodingKeys: String, CodingKey {
        case masterKeyID = "master_key_id"
        case keyID = "key_id"
        case teamID = "team_id"
        case bundleID = "bundle_id"
        case privateKey = "private_key"
        case updatedAt = "updated_at"
        case sandboxEndpoint = "sandbox_endpoint"
        case environment, endpoint, misconfiguration
    }

    init(_ settings: APNsSettingsSummary) {
        sandboxEndpoint = settings.sandboxBaseURL
        keyID = settings.keyID
        teamID = settings.teamID
        bundleID = settings.bundleID
        environment = settings.environment
        endpoint = settings.baseURL
        misconfiguration = settings.misconfigurationReason
        updatedAt = Timestamp.iso8601(settings.updatedAt)
        masterKeyID = settings.masterKeyID
    }
}

/// An app's FCM settings as operators read them back: which service account, never its key.
struct FCMSettingsJSON: Encodable, Sendable {
    let projectID: String
    let clientEmail: String
    let endpoint: String
    let serviceAccount = "[redacted]"
    let misconfiguration: String?
    let updatedAt: String
    let masterKeyID: String?

    enum CodingKeys: String, CodingKey {
        case masterKeyID = "master_key_id"
        case projectID = "project_id"
        case clientEmail = "client_email"
        case serviceAccount = "service_account"
        case updatedAt = "updated_at"
        case endpoint, misconfiguration
    }

    init(_ settings: FCMSettingsSummary) {
        projectID = settings.projectID
        clientEmail = settings.clientEmail
        endpoint = settings.baseURL
        misconfiguration = settings.misconfigurationReason
        updatedAt = Timestamp.iso8601(settings.updatedAt)
        masterKeyID = settings.masterKeyID
    }
}

/// An app's Web Push settings as operators read them: the public key browsers subscribe with, never the private key.
struct WebPushSettingsJSON: Encodable, Sendable {
    let subject: String
    let publicKey: String
    let privateKey = "[redacted]"
    let misconfiguration: String?
    let updatedAt: String
    let masterKeyID: String?

    enum CodingKeys: String, CodingKey {
        case masterKeyID = "master_key_id"
        case publicKey = "public_key"
        case privateKey = "private_key"
        case updatedAt = "updated_at"
        case subject, misconfiguration
    }

    init(_ settings: WebPushSettingsSummary) {
        subject = settings.subject
        publicKey = settings.publicKey
        misconfiguration = settings.misconfigurationReason
        updatedAt = Timestamp.iso8601(settings.updatedAt)
        masterKeyID = settings.masterKeyID
    }
}
