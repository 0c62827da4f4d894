import Crypto
import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import Synchronization

/// What the sender keeps for one app: its VAPID key and contact, and the tokens signed with them,
/// one per push service origin, reused until two hours before they expire.
struct WebPushConnection: AppConnection {
    let privateKey: P256.Signing.PrivateKey
    let subject: String
    var misconfiguration: String?
    /// When the settings were saved: a refusal marks that version only.
    let settingsVersion: Date?
    var loadedAt: ContinuousClock.Instant
    /// Whether a push service has accepted any message signed with these settings.
    var hasAccepted = AcceptanceFlag()
    private let tokens = VAPIDTokens()

    init(_ settings: WebPushSettings) throws {
        guard let key = WebPushVAPID.privateKey(from: settings.privateKeyPEM) else {
            throw WebPushSettingsProblem("web_push_key_unreadable: the app's VAPID private key is not a P-256 key; set it again")
        }
        privateKey = key
        subject = settings.subject
        misconfiguration = settings.misconfigurationReason
        settingsVersion = settings.updatedAt
        loadedAt = .now
    }

    /// The `Authorization` header for requests to `audience`.
    func authorization(audience: String, now: Date) -> String {
        tokens.cache.withLock { tokens in
            if let cached = tokens[audience], cached.expiresAt.timeIntervalSince(now) > 2 * 3600 { return cached.header }
            let expiresAt = now.addingTimeInterval(WebPushVAPID.lifetime)
            let header = WebPushVAPID.authorization(audience: audience, subject: subject, privateKey: privateKey, expiresAt: expiresAt)
            tokens[audience] = (header, expiresAt)
            return header
        }
    }
}

/// Tokens by audience, shared by copies of a connection.
final class VAPIDTokens: Sendable {
    let cache = Mutex<[String: (header: String, expiresAt: Date)]>([:])
}

struct WebPushSettingsProblem: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The apps' Web Push keys (see `AppConnections`).
typealias WebPushConnections = AppConnections<WebPushSettings, WebPushConnection>
