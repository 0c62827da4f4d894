import Foundation

/// Text of a notification in one language.
public struct LocalizedText: Sendable, Equatable, Codable {
    public var title: String?
    public var subtitle: String?
    public var message: String?

    public init(title: String? = nil, subtitle: String? = nil, message: String? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.message = message
    }
}

public enum NotificationPriority: String, Sendable, Codable {
    case high
    case normal
}

/// What a notification says and how it is to be presented, independent of any gateway.
/// Stored as the `content` jsonb of a notification, in this Codable form: snake_case keys,
/// absent optionals left out, `expires_at` as a number of seconds since 1970.
public struct NotificationContent: Sendable, Equatable, Codable {
    /// The default text, used where no localized variant fits the device.
    public var text: LocalizedText
    /// Variants keyed by lower-case locale: a language ("fr") or language-country ("pt-br").
    public var localized: [String: LocalizedText]
    /// Custom payload keys, placed at the payload's top level.
    public var parameters: [String: JSONValue]
    public var sound: String?
    public var badge: Int?
    public var threadID: String?
    public var category: String?
    public var contentAvailable: Bool
    public var mutableContent: Bool
    public var priority: NotificationPriority
    public var collapseID: String?
    public var expiresAt: Date?

    public init(
        text: LocalizedText = LocalizedText(), localized: [String: LocalizedText] = [:],
        parameters: [String: JSONValue] = [:], sound: String? = nil, badge: Int? = nil,
        threadID: String? = nil, category: String? = nil, contentAvailable: Bool = false,
        mutableContent: Bool = false, priority: NotificationPriority = .high, collapseID: String? = nil,
        expiresAt: Date? = nil
    ) {
        self.text = text
        self.localized = localized
        self.parameters = parameters
        self.sound = sound
        self.badge = badge
        self.threadID = threadID
        self.category = category
        self.contentAvailable = contentAvailable
        self.mutableContent = mutableContent
        self.priority = priority
        self.collapseID = collapseID
        self.expiresAt = expiresAt
    }

    /// The text for a device: its language and country ("pt-br"), else its language ("pt"),
    /// else the default text.
    public func text(language: String?, country: String?) -> LocalizedText {
        if let language = language?.lowercased() {
            if let country = country?.lowercased(), let exact = localized["\(language)-\(country)"] {
                return exact
            }
            if let general = localized[language] { return general }
        }
        return text
    }

    /// Whether the notification shows nothing to the user (a background update).
    public var isBackgroundOnly: Bool {
        text == LocalizedText() && localized.isEmpty && sound == nil && badge == nil && contentAvailable
    }
}

extension NotificationContent {
    enum CodingKeys: String, CodingKey {
        case text
        case localized
        case parameters
        case sound
        case badge
        case threadID = "thread_id"
        case category
        case contentAvailable = "content_available"
        case mutableContent = "mutable_content"
        case priority
        case collapseID = "collapse_id"
        case expiresAt = "expires_at"
    }

    /// Keys missing from stored JSON take their defaults, so older rows still decode.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            text: try container.decodeIfPresent(LocalizedText.self, forKey: .text) ?? LocalizedText(),
            localized: try container.decodeIfPresent([String: LocalizedText].self, forKey: .localized) ?? [:],
            parameters: try container.decodeIfPresent([String: JSONValue].self, forKey: .parameters) ?? [:],
            sound: try container.decodeIfPresent(String.self, forKey: .sound),
            badge: try container.decodeIfPresent(Int.self, forKey: .badge),
            threadID: try container.decodeIfPresent(String.self, forKey: .threadID),
            category: try container.decodeIfPresent(String.self, forKey: .category),
            contentAvailable: try container.decodeIfPresent(Bool.self, forKey: .contentAvailable) ?? false,
            mutableContent: try container.decodeIfPresent(Bool.self, forKey: .mutableContent) ?? false,
            priority: try container.decodeIfPresent(NotificationPriority.self, forKey: .priority) ?? .high,
            collapseID: try container.decodeIfPresent(String.self, forKey: .collapseID),
            expiresAt: try container.decodeIfPresent(Double.self, forKey: .expiresAt)
                .map { Date(timeIntervalSince1970: $0) }
        )
    }

    /// `expires_at` is written as seconds since 1970 whatever the encoder's date strategy, so the
    /// stored form does not depend on how the encoder was configured.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(text, forKey: .text)
        try container.encode(localized, forKey: .localized)
        try container.encode(parameters, forKey: .parameters)
        try container.encodeIfPresent(sound, forKey: .sound)
        try container.encodeIfPresent(badge, forKey: .badge)
        try container.encodeIfPresent(threadID, forKey: .threadID)
        try container.encodeIfPresent(category, forKey: .category)
        try container.encode(contentAvailable, forKey: .contentAvailable)
        try container.encode(mutableContent, forKey: .mutableContent)
        try container.encode(priority, forKey: .priority)
        try container.encodeIfPresent(collapseID, forKey: .collapseID)
        try container.encodeIfPresent(expiresAt?.timeIntervalSince1970, forKey: .expiresAt)
    }
}
