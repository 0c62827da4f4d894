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
    /// language and country), the content's `parameters` at the top level, and `n_id` (the
    /// notification id, a JSON number) for the SDKs. `aps` and `n_id` win over parameters of the
    /// same name. Compact JSON with sorted keys.
    public static func encode(
        content: NotificationContent, language: String?, country: String?, notificationID: Int64
    ) throws(APNsPayloadError) -> [UInt8] {
        var aps: [String: JSONValue] = [:]
        let text = content.text(language: language, country: country)
        var alert: [String: JSONValue] = [:]
        if let title = text.title { alert["title"] = .string(title) }
        if let subtitle = text.subtitle { alert["subtitle"] = .string(subtitle) }
        if let body = text.message { alert["body"] = .string(body) }
        if !alert.isEmpty { aps["alert"] = .object(alert) }
        if let badge = content.badge { aps["badge"] = .integer(Int64(badge)) }
        if let sound = content.sound { aps["sound"] = .string(sound) }
        if let threadID = content.threadID { aps["thread-id"] = .string(threadID) }
        if let category = content.category { aps["category"] = .string(category) }
        if content.contentAvailable { aps["content-available"] = .integer(1) }
        if content.mutableContent { aps["mutable-content"] = .integer(1) }

        var root = content.parameters
        root["aps"] = .object(aps)
        root["n_id"] = .integer(notificationID)

        let body = JSONValue.object(root)
        guard body.numbersAreFinite else { throw .unencodable("a parameter holds a number JSON cannot write (infinite or NaN)") }
        let payload = Array(body.jsonText().utf8)
        guard payload.count <= maximumSize else { throw .payloadTooLarge(size: payload.count) }
        return payload
    }
}
