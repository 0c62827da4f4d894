import Foundation
import NotifiableCore

public enum APNsPayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The encoded payload is larger than APNs accepts (4096 bytes).
    case payloadTooLarge(size: Int)
    /// The content holds a value JSON cannot represent (a non-finite number).
    case unencodable(String)

    public var description: String {
        switch self {
        case .payloadTooLarge(let size):
            "payload_too_large: \(size) bytes, APNs accepts at most \(APNsPayload.maximumSize)"
        case .unencodable(let detail):
            "payload_unencodable: \(detail)"
        }
    }
}

/// The JSON body of an APNs request.
public enum APNsPayload {
    /// The largest payload APNs accepts for a regular (non-VoIP) notification.
    public static let maximumSize = 4096

    /// The payload for one device: `aps` built from the content (text chosen for the device's
    /// language and country), the content's `parameters` at the top level, `image_url` when it has
    /// an image (for the app's notification service extension), and `n_id` (the notification id, a
    /// JSON number) for the SDKs; then the sender's `apns.payload` override merged in. A push to a
    /// Live Activity is its `aps` (`LiveActivityPush.aps`) and `n_id` alone. `aps` and
    /// `n_id` win over parameters of the same name. Compact JSON with sorted keys.
    public static func encode(
        content: NotificationContent, language: String?, country: String?, notificationID: Int64
    ) throws(APNsPayloadError) -> [UInt8] {
        if let activity = content.liveActivity {
            return try serialize(["aps": .object(activity.aps), "n_id": .integer(notificationID)])
        }
        var root = content.parameters
        root["aps"] = .object(aps(content: content, language: language, country: country))
        if let imageURL = content.imageURL { root["image_url"] = .string(imageURL) }
        if let override = content.overrides?.apnsPayload, !override.isEmpty {
            root = PushOverrides.merged(root, with: override)
        }
        root["n_id"] = .integer(notificationID)
        return try serialize(root)
    }

    /// The `aps` dictionary: what iOS itself reads. Also what FCM passes to an iPhone registered
    /// through Firebase (`apns.payload.aps`).
    ///
    /// - `alert`: title, subtitle and body for the device's locale, and the localization keys
    ///   (`title-loc-key`, `title-loc-args`, `loc-key`, `loc-args`);
    /// - `sound`: the sound's name, or for a critical alert `{"critical": 1, "name", "volume"}`;
    /// - `interruption-level`, `relevance-score`, `target-content-id`, `filter-criteria` as given;
    /// - `mutable-content: 1` when asked for, or implied by an image or rich content at accept time.
    public static func aps(content: NotificationContent, language: String?, country: String?) -> [String: JSONValue] {
        var aps: [String: JSONValue] = [:]
        let text = content.text(language: language, country: country)
        var alert: [String: JSONValue] = [:]
        if let title = text.title { alert["title"] = .string(title) }
        if let subtitle = text.subtitle { alert["subtitle"] = .string(subtitle) }
        if let body = text.message { alert["body"] = .string(body) }
        if let keys = content.localizationKeys {
            if let key = keys.titleKey { alert["title-loc-key"] = .string(key) }
            if let args = keys.titleArgs { alert["title-loc-args"] = .array(args.map(JSONValue.string)) }
            if let key = keys.bodyKey { alert["loc-key"] = .string(key) }
            if let args = keys.bodyArgs { alert["loc-args"] = .array(args.map(JSONValue.string)) }
        }
        if !alert.isEmpty { aps["alert"] = .object(alert) }
        if let badge = content.badge { aps["badge"] = .integer(Int64(badge)) }
        if let critical = content.criticalSound {
            aps["sound"] = .object(["critical": .integer(1), "name": .string(critical.name), "volume": .number(critical.volume)])
        } else if let sound = content.sound {
            aps["sound"] = .string(sound)
        }
        if let threadID = content.threadID { aps["thread-id"] = .string(threadID) }
        if let category = content.category { aps["category"] = .string(category) }
        if content.contentAvailable { aps["content-available"] = .integer(1) }
        if content.mutableContent { aps["mutable-content"] = .integer(1) }
        if let level = content.interruptionLevel { aps["interruption-level"] = .string(level.rawValue) }
        if let score = content.relevanceScore { aps["relevance-score"] = .number(score) }
        if let id = content.targetContentID { aps["target-content-id"] = .string(id) }
        if let criteria = content.filterCriteria { aps["filter-criteria"] = .string(criteria) }
        return aps
    }

    /// Compact JSON with sorted keys, within APNs's size.
    static func serialize(_ root: [String: JSONValue]) throws(APNsPayloadError) -> [UInt8] {
        let body = JSONValue.object(root)
        guard body.numbersAreFinite else { throw .unencodable("a parameter holds a number JSON cannot write (infinite or NaN)") }
        let payload = Array(body.jsonText().utf8)
        guard payload.count <= maximumSize else { throw .payloadTooLarge(size: payload.count) }
        return payload
    }
}
