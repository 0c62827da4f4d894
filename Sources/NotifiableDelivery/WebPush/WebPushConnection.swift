import Crypto
import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import Synchronization

/// What the sender keeps for one app: its VAPID key and contact, the tokens signed with them and
/// how each push service has answered them, one entry per push service origin. A reload of
/// unchanged settings keeps all of it.
struct WebPushConnection: AppConnection {
    let privateKey: P256.Signing.PrivateKey
    let subject: String
    var misconfiguration: String?
    /// When the settings were saved: a refusal marks that version only.
    let settingsVersion: Date?
    var loadedAt: ContinuousClock.Instant
    let origins: WebPushOrigins

    init(_ settings: WebPushSettings, previous: WebPushConnection?) throws {
        guard let key = WebPushVAPID.privateKey(from: settings.privateKeyPEM) else {
            throw WebPushSettingsProblem("web_push_key_unreadable: the app's VAPID private key is not a P-256 key; set it again")
        }
        privateKey = key
        subject = settings.subject
        misconfiguration = settings.misconfigurationReason
        settingsVersion = settings.updatedAt
        loadedAt = .now
        if let previous, previous.subject == settings.subject, previous.privateKey.rawRepresentation == key.rawRepresentation {
            origins = previous.origins
        } else {
            origins = WebPushOrigins()
        }
    }

    /// The `Authorization` header for requests to `audience`, reused until two hours before it expires.
    func authorization(audience: String, now: Date) -> String {
        origins.table.withLock { table in
            if let cached = table[audience]?.token, cached.expiresAt.timeIntervalSince(now) > 2 * 3600 { return cached.header }
            let expiresAt = now.addingTimeInterval(WebPushVAPID.lifetime)
            let header = WebPushVAPID.authorization(audience: audience, subject: subject, privateKey: privateKey, expiresAt: expiresAt)
            table[audience, default: WebPushOrigins.Standing()].token = (header, expiresAt)
            return header
        }
    }
}

/// How each push service has answered an app's current key: what tells one browser's stale
/// subscription (made with another key) from a key every browser's service refuses.
final class WebPushOrigins: Sendable {
    struct Standing {
        var token: (header: String, expiresAt: Date)?
        /// A message signed with these settings was taken.
        var accepted = false
        /// Subscriptions whose VAPID token was refused, while none was taken.
        var refused: Set<Int64> = []
    }

    /// Distinct subscriptions of one push service refusing the key, with none taken, before the key
    /// is taken to be wrong: one browser registered with another key (anyone holding the device
    /// credentials can register one) must not stop an app's sends.
    static let refusalsBeforeMisconfigured = 3

    let table = Mutex<[String: Standing]>([:])

    func accepted(_ origin: String) {
        table.withLock { $0[origin, default: Standing()].accepted = true }
    }

    /// What a VAPID refusal (401, 403) by `origin` for `deviceID` means.
    enum Refusal {
        /// The service takes this key from others: this subscription was made with another one.
        case subscriptionStale
        /// Too few browsers have refused to say.
        case unknown
        /// Enough distinct browsers of the service refuse it and none took it: the key is wrong.
        case keyRefused
    }

    func refused(_ origin: String, deviceID: Int64) -> Refusal {
        table.withLock { table in
            var standing = table[origin, default: Standing()]
            defer { table[origin] = standing }
            if standing.accepted { return .subscriptionStale }
            standing.refused.insert(deviceID)
            return standing.refused.count >= Self.refusalsBeforeMisconfigured ? .keyRefused : .unknown
        }
    }
}

struct WebPushSettingsProblem: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The apps' Web Push keys (see `AppConnections`).
typealias WebPushConnections = AppConnections<WebPushSettings, WebPushConnection>
