import Foundation
import NotifiableCore

/// A device as the API answers it. `id` is a number: the SDKs store it and send it back as
/// `device_token_id`.
struct DeviceJSON: Encodable, Sendable {
    let id: Int64
    let provider: String
    let token: String
    let name: String?
    let userAlias: String?
    let language: String?
    let country: String?
    let locale: String?
    let customProperties: JSONValue
    let platformProperties: JSONValue
    /// Sorted.
    let tags: [String]
    let createdAt: String
    let updatedAt: String
    let invalidatedAt: String?
    let platform: String?
    let apnsEnvironment: String?
    let badge: Int

    enum CodingKeys: String, CodingKey {
        case id, provider, token, name, language, country, locale, tags
        case userAlias = "user_alias"
        case customProperties = "custom_properties"
        case platformProperties = "platform_properties"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case invalidatedAt = "invalidated_at"
        case platform
        case apnsEnvironment = "apns_environment"
        case badge
    }

    init(_ device: Device) {
        id = device.id
        provider = device.provider.rawValue
        token = device.token
        name = device.name
        userAlias = device.userAlias
        language = device.language
        country = device.country
        locale = device.language.map { language in device.country.map { "\(language)_\($0.uppercased())" } ?? language }
        customProperties = .object(device.customProperties)
        platformProperties = .object(device.platformProperties)
        tags = device.tags
        createdAt = Timestamp.iso8601(device.createdAt)
        updatedAt = Timestamp.iso8601(device.updatedAt)
        invalidatedAt = device.invalidatedAt.map(Timestamp.iso8601)
        // What the device is taken for: an APNs device is an iPhone, an FCM device Android unless it said.
        platform = device.platform?.rawValue ?? device.provider.defaultPlatform
        apnsEnvironment = device.apnsEnvironment?.rawValue
        badge = device.badge
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(provider, forKey: .provider)
        try container.encode(token, forKey: .token)
        // Absent values are written as null so clients see every field, always.
        try container.encode(name, forKey: .name)
        try container.encode(userAlias, forKey: .userAlias)
        try container.encode(language, forKey: .language)
        try container.encode(country, forKey: .country)
        try container.encode(locale, forKey: .locale)
        try container.encode(customProperties, forKey: .customProperties)
        try container.encode(platformProperties, forKey: .platformProperties)
        try container.encode(tags, forKey: .tags)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encode(invalidatedAt, forKey: .invalidatedAt)
        try container.encode(platform, forKey: .platform)
        try container.encode(apnsEnvironment, forKey: .apnsEnvironment)
        try container.encode(badge, forKey: .badge)
    }
}

enum Timestamp {
    static func iso8601(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
