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
/// Stored as the `content` jsonb of a notification, in this Codable form.
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
