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
    /// Where devices registered with `apns_environment: sandbox` go; nil when these settings cannot
    /// reach the sandbox (a custom endpoint for production and no sandbox endpoint).
    public let sandboxBaseURL: String?
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
