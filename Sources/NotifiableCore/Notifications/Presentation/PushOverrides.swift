/// Fields a sender adds to what the service generates, per platform, merged last (as FCM v1's
/// platform overrides are): for whatever Apple or Google add next. The service's own identity
/// fields (the device token, the topic, `apns-id`, `n_id`) cannot be overridden; the request
/// parser refuses them.
public struct PushOverrides: Sendable, Equatable, Codable {
    /// APNs request headers, lower-case names, each replacing the generated one.
    public var apnsHeaders: [String: String]
    /// Deep-merged into the APNs payload (`aps` included).
    public var apnsPayload: [String: JSONValue]
    /// Deep-merged into an FCM message's `android`.
    public var fcmAndroid: [String: JSONValue]
    /// Deep-merged into an FCM message's `apns` (iPhones on Firebase).
    public var fcmAPNs: [String: JSONValue]
    /// Added to an FCM message's `data`, strings only.
    public var fcmData: [String: String]

    public init(
        apnsHeaders: [String: String] = [:], apnsPayload: [String: JSONValue] = [:], fcmAndroid: [String: JSONValue] = [:],
        fcmAPNs: [String: JSONValue] = [:], fcmData: [String: String] = [:]
    ) {
        self.apnsHeaders = apnsHeaders
        self.apnsPayload = apnsPayload
        self.fcmAndroid = fcmAndroid
        self.fcmAPNs = fcmAPNs
        self.fcmData = fcmData
    }

    enum CodingKeys: String, CodingKey {
        case apnsHeaders = "apns_headers"
        case apnsPayload = "apns_payload"
        case fcmAndroid = "fcm_android"
        case fcmAPNs = "fcm_apns"
        case fcmData = "fcm_data"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            apnsHeaders: try container.decodeIfPresent([String: String].self, forKey: .apnsHeaders) ?? [:],
            apnsPayload: try container.decodeIfPresent([String: JSONValue].self, forKey: .apnsPayload) ?? [:],
            fcmAndroid: try container.decodeIfPresent([String: JSONValue].self, forKey: .fcmAndroid) ?? [:],
            fcmAPNs: try container.decodeIfPresent([String: JSONValue].self, forKey: .fcmAPNs) ?? [:],
            fcmData: try container.decodeIfPresent([String: String].self, forKey: .fcmData) ?? [:]
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if !apnsHeaders.isEmpty { try container.encode(apnsHeaders, forKey: .apnsHeaders) }
        if !apnsPayload.isEmpty { try container.encode(apnsPayload, forKey: .apnsPayload) }
        if !fcmAndroid.isEmpty { try container.encode(fcmAndroid, forKey: .fcmAndroid) }
        if !fcmAPNs.isEmpty { try container.encode(fcmAPNs, forKey: .fcmAPNs) }
        if !fcmData.isEmpty { try container.encode(fcmData, forKey: .fcmData) }
    }

    public var isEmpty: Bool { self == PushOverrides() }

    /// `base` with `override` merged in: objects member by member, recursively; any other value
    /// replaces; `null` removes the member, so a sender can also take a generated field away.
    public static func merged(_ base: [String: JSONValue], with override: [String: JSONValue]) -> [String: JSONValue] {
        var result = base
        for (key, value) in override {
            switch (result[key], value) {
            case (_, .null):
                result[key] = nil
            case (.object(let inner)?, .object(let replacement)):
                result[key] = .object(merged(inner, with: replacement))
            case (_, .object(let replacement)):
                result[key] = .object(merged([:], with: replacement))
            default:
                result[key] = value
            }
        }
        return result
    }
}
