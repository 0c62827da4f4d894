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

    /// A delivery's place in the queue (`deliveries.priority`), in APNs's numbers: within an
    /// app, workers claim 10 before 5.
    public var queueRank: Int16 {
        switch self {
        case .high: 10
        case .normal: 5
        }
    }
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
    /// Whether FCM gets a `notification` block beside the data keys; the app's setting when the
    /// notification was accepted.
    public var androidStyle: AndroidStyle
    /// The sender asked for `"ttl_seconds": 0`: the gateways are told not to store it
    /// (`apns-expiration: 0`, FCM `ttl` `0s`), while the queue may still try it until `expiresAt`,
    /// `nowOrNeverGrace` after it was accepted, so a push that waited behind others or met a
    /// gateway error is tried rather than dropped unsent.
    public var nowOrNever: Bool
    /// iOS 15+: how it may break through a Focus; `time-sensitive` and `critical` also make it
    /// urgent on Android.
    public var interruptionLevel: InterruptionLevel?
    /// iOS 15+: which of the app's notifications the summary shows first, 0…1.
    public var relevanceScore: Double?
    /// iOS: the window (scene) the notification brings forward.
    public var targetContentID: String?
    /// iOS 15+: which Focus filter lets it through.
    public var filterCriteria: String?
    /// A critical alert's sound, in place of `sound`.
    public var criticalSound: CriticalSound?
    /// An https image: iOS apps fetch it in their notification service extension (the push
    /// carries `image_url` and `mutable-content`), Android shows it.
    public var imageURL: String?
    public var android: AndroidPresentation?
    public var localizationKeys: LocalizationKeys?
    public var overrides: PushOverrides?
    /// `"badge": "+1"`: each device's kept badge goes up by this much, and the push carries the
    /// result (fixed per delivery at fan-out, `ClaimedDelivery.badge`).
    public var badgeIncrement: Int?
    /// Set for a push to a Live Activity: the rest of the content is not sent.
    public var liveActivity: LiveActivityPush?

    /// How long the queue keeps trying a now-or-never notification.
    public static let nowOrNeverGrace: TimeInterval = 60

    public init(
        text: LocalizedText = LocalizedText(), localized: [String: LocalizedText] = [:],
        parameters: [String: JSONValue] = [:], sound: String? = nil, badge: Int? = nil,
        threadID: String? = nil, category: String? = nil, contentAvailable: Bool = false,
        mutableContent: Bool = false, priority: NotificationPriority = .high, collapseID: String? = nil,
        expiresAt: Date? = nil, androidStyle: AndroidStyle = .data, nowOrNever: Bool = false
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
        self.androidStyle = androidStyle
        self.nowOrNever = nowOrNever
    }

    /// The Android presentation with the badge as the launcher's count where the sender gave no
    /// count of its own.
    public var androidPresentation: AndroidPresentation {
        var android = android ?? AndroidPresentation()
        if android.notificationCount == nil { android.notificationCount = badge }
        return android
    }

    /// The text for a device, each field on its own: `localized["pt-br"]`'s field, else
    /// `localized["pt"]`'s, else the default's. A variant that gives only a title keeps the
    /// default message, so a French device never gets a title without a body.
    public func text(language: String?, country: String?) -> LocalizedText {
        guard let language = language?.lowercased() else { return text }
        var variants: [LocalizedText] = []
        if let country = country?.lowercased(), let exact = localized["\(language)-\(country)"] { variants.append(exact) }
        if let general = localized[language] { variants.append(general) }
        guard !variants.isEmpty else { return text }
        variants.append(text)
        return LocalizedText(
            title: variants.lazy.compactMap(\.title).first,
            subtitle: variants.lazy.compactMap(\.subtitle).first,
            message: variants.lazy.compactMap(\.message).first
        )
    }

    /// Each text the content can show, as a device's language and country: the default (nil, nil)
    /// first, then each localized variant in key order (`pt-br` → `pt`, `br`). What a check or a
    /// preview of every payload the notification can make walks through.
    public var localeVariants: [(key: String?, language: String?, country: String?)] {
        [(nil, nil, nil)]
            + localized.keys.sorted().map { key in
                let parts = key.split(separator: "-").map(String.init)
                return (key, parts.first, parts.count > 1 ? parts[1] : nil)
            }
    }

    /// What makes a push of this notification replace an earlier one on the device: the sender's
    /// `collapse_id`, else one per notification (`n<id>`), so a push sent twice (its first answer
    /// lost with the connection) replaces itself instead of showing twice. Carried as
    /// `apns-collapse-id` and as the Android notification's `tag`.
    public func collapseIdentifier(notificationID: Int64) -> String {
        if let collapseID, !collapseID.isEmpty { return collapseID }
        return "n\(notificationID)"
    }

    /// Whether the notification shows nothing to the user (a background update).
    public var isBackgroundOnly: Bool {
        text == LocalizedText() && localized.isEmpty && sound == nil && criticalSound == nil && badge == nil && badgeIncrement == nil
            && !(localizationKeys?.showsText ?? false) && contentAvailable
    }

    /// Whether it must reach the device at once whatever its queue priority: a time-sensitive or
    /// critical interruption level.
    public var isUrgent: Bool { interruptionLevel?.isUrgent ?? false }
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
        case androidStyle = "android_style"
        case nowOrNever = "now_or_never"
        case interruptionLevel = "interruption_level"
        case relevanceScore = "relevance_score"
        case targetContentID = "target_content_id"
        case filterCriteria = "filter_criteria"
        case criticalSound = "critical_sound"
        case imageURL = "image_url"
        case android
        case localizationKeys = "localization_keys"
        case overrides
        case badgeIncrement = "badge_increment"
        case liveActivity = "live_activity"
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
                .map { Date(timeIntervalSince1970: $0) },
            // Stored before the setting existed: data-only, which the Android SDK can read.
            androidStyle: try container.decodeIfPresent(AndroidStyle.self, forKey: .androidStyle) ?? .data,
            nowOrNever: try container.decodeIfPresent(Bool.self, forKey: .nowOrNever) ?? false
        )
        interruptionLevel = try container.decodeIfPresent(InterruptionLevel.self, forKey: .interruptionLevel)
        relevanceScore = try container.decodeIfPresent(Double.self, forKey: .relevanceScore)
        targetContentID = try container.decodeIfPresent(String.self, forKey: .targetContentID)
        filterCriteria = try container.decodeIfPresent(String.self, forKey: .filterCriteria)
        criticalSound = try container.decodeIfPresent(CriticalSound.self, forKey: .criticalSound)
        imageURL = try container.decodeIfPresent(String.self, forKey: .imageURL)
        android = try container.decodeIfPresent(AndroidPresentation.self, forKey: .android)
        localizationKeys = try container.decodeIfPresent(LocalizationKeys.self, forKey: .localizationKeys)
        overrides = try container.decodeIfPresent(PushOverrides.self, forKey: .overrides)
        badgeIncrement = try container.decodeIfPresent(Int.self, forKey: .badgeIncrement)
        liveActivity = try container.decodeIfPresent(LiveActivityPush.self, forKey: .liveActivity)
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
        try container.encode(androidStyle, forKey: .androidStyle)
        if nowOrNever { try container.encode(nowOrNever, forKey: .nowOrNever) }
        try container.encodeIfPresent(interruptionLevel, forKey: .interruptionLevel)
        try container.encodeIfPresent(relevanceScore, forKey: .relevanceScore)
        try container.encodeIfPresent(targetContentID, forKey: .targetContentID)
        try container.encodeIfPresent(filterCriteria, forKey: .filterCriteria)
        try container.encodeIfPresent(criticalSound, forKey: .criticalSound)
        try container.encodeIfPresent(imageURL, forKey: .imageURL)
        try container.encodeIfPresent(android, forKey: .android)
        try container.encodeIfPresent(localizationKeys, forKey: .localizationKeys)
        try container.encodeIfPresent(overrides, forKey: .overrides)
        try container.encodeIfPresent(badgeIncrement, forKey: .badgeIncrement)
        try container.encodeIfPresent(liveActivity, forKey: .liveActivity)
    }

    /// The content as one device's push says it: with the badge its delivery carries.
    public func withBadge(_ badge: Int?) -> NotificationContent {
        guard let badge else { return self }
        var content = self
        content.badge = badge
        return content
    }
}
