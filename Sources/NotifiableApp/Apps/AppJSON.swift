import Foundation
import NotifiableCore
import NotifiableStore

/// An app as the admin API answers it. Secrets never appear: credentials show their access
/// ids, gateway settings everything but their keys.
struct AppJSON: Encodable, Sendable {
    let id: Int64
    let name: String
    let deliveryMode: String
    let requireVerifiedAlias: Bool
    let userTokenGeneration: Int
    let androidStyle: String
    let defaultTTLSeconds: Int64
    let defaultMutableContent: Bool
    let defaultContentAvailable: Bool
    /// Null: the service's NOTIFIABLE_RETENTION_DAYS.
    let retentionDays: Int?
    let defaultAndroidChannelID: String?
    let createdAt: String
    let updatedAt: String
    let credentials: [CredentialJSON]?
    /// Every provider's settings (the app's page), nil in listings.
    let gateways: GatewaySummaries?

    enum CodingKeys: String, CodingKey {
        case id, name, credentials, apns, fcm, webpush
        case deliveryMode = "delivery_mode"
        case requireVerifiedAlias = "require_verified_alias"
        case userTokenGeneration = "user_token_generation"
        case androidStyle = "android_style"
        case defaultTTLSeconds = "default_ttl_seconds"
        case defaultMutableContent = "default_mutable_content"
        case defaultContentAvailable = "default_content_available"
        case retentionDays = "retention_days"
        case defaultAndroidChannelID = "default_android_channel_id"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// The app alone (listings).
    init(_ app: App, policy: UserTokenPolicy) {
        self.init(app, policy: policy, credentials: nil, gateways: nil)
    }

    /// The app with its credentials and gateway settings (null when not configured).
    init(_ app: App, policy: UserTokenPolicy, credentials: [AppStore.CredentialSummary]?, gateways: GatewaySummaries?) {
        id = app.id
        name = app.name
        deliveryMode = app.deliveryMode.rawValue
        requireVerifiedAlias = policy.requireVerifiedAlias
        userTokenGeneration = policy.generation
        androidStyle = app.pushDefaults.androidStyle.rawValue
        defaultTTLSeconds = app.pushDefaults.timeToLiveSeconds
        defaultMutableContent = app.pushDefaults.mutableContent
        defaultContentAvailable = app.pushDefaults.contentAvailable
        retentionDays = app.retentionDays
        defaultAndroidChannelID = app.pushDefaults.androidChannelID
        createdAt = Timestamp.iso8601(app.createdAt)
        updatedAt = Timestamp.iso8601(app.updatedAt)
        self.credentials = credentials?.map(CredentialJSON.init)
        self.gateways = gateways
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(deliveryMode, forKey: .deliveryMode)
        try container.encode(requireVerifiedAlias, forKey: .requireVerifiedAlias)
        try container.encode(userTokenGeneration, forKey: .userTokenGeneration)
        try container.encode(androidStyle, forKey: .androidStyle)
        try container.encode(defaultTTLSeconds, forKey: .defaultTTLSeconds)
        try container.encode(defaultMutableContent, forKey: .defaultMutableContent)
        try container.encode(defaultContentAvailable, forKey: .defaultContentAvailable)
        try container.encode(retentionDays, forKey: .retentionDays)
        try container.encode(defaultAndroidChannelID, forKey: .defaultAndroidChannelID)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encodeIfPresent(credentials, forKey: .credentials)
        // Each provider present, null when not configured, which an operator should see spelled out.
        if let gateways {
            try container.encode(gateways.apns.map(APNsSettingsJSON.init), forKey: .apns)
            try container.encode(gateways.fcm.map(FCMSettingsJSON.init), forKey: .fcm)
            try container.encode(gateways.webpush.map(WebPushSettingsJSON.init), forKey: .webpush)
        }
    }
}

struct CredentialJSON: Encodable, Sendable {
    let role: String
    let accessID: String
    let createdAt: String
    let expiresAt: String?

    enum CodingKeys: String, CodingKey {
        case role
        case accessID = "access_id"
        case createdAt = "created_at"
        case expiresAt = "expires_at"
    }

    init(_ summary: AppStore.CredentialSummary) {
        role = summary.role.rawValue
        accessID = summary.accessID
        createdAt = Timestamp.iso8601(summary.createdAt)
        expiresAt = summary.expiresAt.map(Timestamp.iso8601)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(role, forKey: .role)
        try container.encode(accessID, forKey: .accessID)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(expiresAt, forKey: .expiresAt)
    }
}

/// A new app with its credentials, shown once: exactly CONTRACT §1's object (what `notifiable
/// apps create --json` prints); the delivery mode is read back with the app.
public struct CreatedAppJSON: Encodable, Sendable {
    struct Pair: Encodable, Sendable {
        let accessID: String
        let secretKey: String
        enum CodingKeys: String, CodingKey {
            case accessID = "access_id"
            case secretKey = "secret_key"
        }
    }
    let id: Int64
    let name: String
    let deliveryMode: String
    let deviceCredentials: Pair
    let serverCredentials: Pair

    enum CodingKeys: String, CodingKey {
        case id, name
        case deviceCredentials = "device_credentials"
        case serverCredentials = "server_credentials"
    }

    public init(_ created: AppStore.CreatedApp) {
        id = created.app.id
        name = created.app.name
        deliveryMode = created.app.deliveryMode.rawValue
        deviceCredentials = Pair(accessID: created.deviceCredential.accessID, secretKey: created.deviceCredential.secretKey)
        serverCredentials = Pair(accessID: created.serverCredential.accessID, secretKey: created.serverCredential.secretKey)
    }

    public func jsonText() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    public func humanText() -> String {
        """
        Created app \(id) "\(name)" (\(deliveryMode) delivery). The secret keys are shown only now: store them.

        Device credentials (ship these in the mobile app):
          access id   \(deviceCredentials.accessID)
          secret key  \(deviceCredentials.secretKey)

        Server credentials (keep these on the app's backend):
          access id   \(serverCredentials.accessID)
          secret key  \(serverCredentials.secretKey)
        """
    }
}

/// A user-token key rotation's answer: the generation that signs the app's tokens from now on.
struct UserTokenRotationJSON: Encodable, Sendable {
    let appID: Int64
    let userTokenGeneration: Int

    enum CodingKeys: String, CodingKey {
        case appID = "app_id"
        case userTokenGeneration = "user_token_generation"
    }

    init(_ policy: UserTokenPolicy) {
        appID = policy.appID
        userTokenGeneration = policy.generation
    }
}

/// A rotation's answer: the new pair (shown once) and until when the earlier ones work.
struct RotationJSON: Encodable, Sendable {
    let role: String
    let accessID: String
    let secretKey: String
    let previous: [CredentialJSON]

    enum CodingKeys: String, CodingKey {
        case role, previous
        case accessID = "access_id"
        case secretKey = "secret_key"
    }

    init(_ rotation: AppStore.Rotation) {
        role = rotation.credential.role.rawValue
        accessID = rotation.credential.accessID
        secretKey = rotation.credential.secretKey
        previous = rotation.previous.map(CredentialJSON.init)
    }
}
