import Crypto
import Foundation
import NotifiableCore

/// What a browser's service worker receives (before encryption) and the headers that go with it
/// (RFC 8030 §5): a JSON document it can show with `showNotification` and report with `n_id`.
public struct WebPushMessage: Sendable {
    public let plaintext: [UInt8]
    /// RFC 8030 §5.2: how long the push service keeps the message for an offline browser.
    public let ttl: Int64
    /// RFC 8030 §5.3: `very-low`, `low`, `normal` or `high`.
    public let urgency: String
    /// RFC 8030 §5.4: a message with the same topic replaces one still waiting.
    public let topic: String?

    /// A push service keeps a message at most this long when the notification does not expire.
    public static let defaultTTL = NotificationRequest.maxTTLSeconds

    public init(content: NotificationContent, language: String?, country: String?, notificationID: Int64, now: Date) {
        let text = content.text(language: language, country: country)
        var document: [String: JSONValue] = ["n_id": .string(String(notificationID))]
        if let title = text.title { document["title"] = .string(title) }
        if let message = text.message { document["message"] = .string(message) }
        if !content.parameters.isEmpty { document["parameters"] = .object(content.parameters) }
        if let image = content.imageURL { document["image_url"] = .string(image) }
        if let badge = content.badge { document["badge"] = .integer(Int64(badge)) }
        plaintext = Array(JSONValue.object(document).jsonText().utf8)
        ttl = content.secondsToLive(now: now) ?? Self.defaultTTL
        urgency = Self.urgency(of: content)
        topic = content.collapseID.map(Self.topic)
    }

    /// RFC 8030 §5.3 keeps `high` for what must wake a device at once (a call, a time-sensitive
    /// alert) and calls `normal` an ordinary message: `priority: high`, the default, is an ordinary
    /// message to a browser, and `priority: normal` (APNs's "at a power-efficient time") is `low`.
    static func urgency(of content: NotificationContent) -> String {
        if content.isUrgent { return "high" }
        return content.priority == .high ? "normal" : "low"
    }

    /// The collapse id as a topic: itself when it is at most 32 characters of the URL-safe base64
    /// alphabet, else the first 32 characters of its SHA-256 in base64url, so one id always gives
    /// one topic.
    public static func topic(for collapseID: String) -> String {
        let isSafe = collapseID.utf8.allSatisfy { byte in
            (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == 45 || byte == 95
        }
        if isSafe, (1...32).contains(collapseID.utf8.count) { return collapseID }
        return String(Base64URL.encode(Data(SHA256.hash(data: Data(collapseID.utf8)))).prefix(32))
    }
}
