import Foundation
import NotifiableCore
import PostgresNIO

/// How one app signs its Web Push requests (RFC 8292): a VAPID key pair, whose public half browsers
/// subscribe with, and the contact push services are shown.
public struct WebPushSettings: Sendable, Equatable {
    /// `mailto:` or `https:`: whom a push service's operator contacts about this sender.
    public var subject: String
    /// The public key as browsers take it (`applicationServerKey`): an uncompressed P-256 point, base64url.
    public var publicKey: String
    /// The private key, PEM, in the clear: only in memory.
    public var privateKeyPEM: String
    public var misconfigurationReason: String?
    public var updatedAt: Date?

    public init(subject: String, publicKey: String, privateKeyPEM: String) {
        self.subject = subject
        self.publicKey = publicKey
        self.privateKeyPEM = privateKeyPEM
    }
}

/// An app's Web Push settings as operators read them: the public key and contact, never the private key.
public struct WebPushSettingsSummary: Sendable, Equatable {
    public let subject: String
    public let publicKey: String
    public let misconfigurationReason: String?
    public let updatedAt: Date
    public let masterKeyID: String?
}

extension WebPushSettings: GatewaySettings {
    package static let provider = Provider.webpush
    package var secret: String { privateKeyPEM }

    package func upsert(appID: Int64, sealed: Data, masterKeyID: String) throws -> PostgresQuery {
        try """
        INSERT INTO webpush_settings AS s (app_id, subject, public_key, sealed_private_key, master_key_id)
        SELECT id, \(subject), \(publicKey), \(sealed), \(masterKeyID)
        FROM apps WHERE id = \(appID)
        ON CONFLICT (app_id) DO UPDATE SET
            subject = EXCLUDED.subject, public_key = EXCLUDED.public_key,
            sealed_private_key = EXCLUDED.sealed_private_key, master_key_id = EXCLUDED.master_key_id,
            misconfigured_at = NULL, misconfiguration_reason = NULL, updated_at = now()
        RETURNING s.app_id
        """
    }

    package static func select(appID: Int64) -> PostgresQuery {
        """
        SELECT subject, public_key, sealed_private_key, master_key_id, misconfiguration_reason, updated_at
        FROM webpush_settings WHERE app_id = \(appID)
        """
    }

    package init(row: PostgresRow, secret: (Data, String?) throws -> String) throws {
        let (subject, publicKey, sealed, masterKeyID, misconfiguration, updatedAt) = try row.decode(
            (String, String, Data, String?, String?, Date).self
        )
        self.init(subject: subject, publicKey: publicKey, privateKeyPEM: try secret(sealed, masterKeyID))
        misconfigurationReason = misconfiguration
        self.updatedAt = updatedAt
    }

    package static func selectSummary(appID: Int64) -> PostgresQuery {
        "SELECT subject, public_key, misconfiguration_reason, updated_at, master_key_id FROM webpush_settings WHERE app_id = \(appID)"
    }

    package static func summary(row: PostgresRow) throws -> WebPushSettingsSummary {
        let (subject, publicKey, misconfiguration, updatedAt, masterKeyID) = try row.decode((String, String, String?, Date, String?).self)
        return WebPushSettingsSummary(
            subject: subject, publicKey: publicKey, misconfigurationReason: misconfiguration, updatedAt: updatedAt, masterKeyID: masterKeyID
        )
    }
}
