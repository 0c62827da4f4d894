/// How Android shows a notification, beyond its text: FCM's `android.notification` fields when
/// Android draws it (notification style), the same values under `android_`-prefixed data keys
/// when the app draws it (data style). docs/compatibility.md §12.
public struct AndroidPresentation: Sendable, Equatable, Codable {
    /// The notification channel (Android 8+); without one Android uses the app's default channel.
    public var channelID: String?
    /// A drawable resource name of the app.
    public var icon: String?
    /// `#rrggbb`, the only form FCM takes.
    public var color: String?
    /// The activity to open, by intent filter action.
    public var clickAction: String?
    public var visibility: AndroidVisibility?
    /// Stays when tapped.
    public var sticky: Bool?
    /// The count shown on the launcher's badge; the notification's badge when not given.
    public var notificationCount: Int?

    public init(
        channelID: String? = nil, icon: String? = nil, color: String? = nil, clickAction: String? = nil,
        visibility: AndroidVisibility? = nil, sticky: Bool? = nil, notificationCount: Int? = nil
    ) {
        self.channelID = channelID
        self.icon = icon
        self.color = color
        self.clickAction = clickAction
        self.visibility = visibility
        self.sticky = sticky
        self.notificationCount = notificationCount
    }

    enum CodingKeys: String, CodingKey {
        case channelID = "channel_id"
        case icon
        case color
        case clickAction = "click_action"
        case visibility
        case sticky
        case notificationCount = "notification_count"
    }

    public var isEmpty: Bool { self == AndroidPresentation() }

    /// Whether `text` is a colour as FCM takes it: `#` and six hexadecimal digits.
    public static func isColor(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 7 && bytes[0] == UInt8(ascii: "#") && bytes.dropFirst().allSatisfy { $0.isHexDigit }
    }
}

/// Who may see the notification on a locked screen (FCM's `Visibility`).
public enum AndroidVisibility: String, Sendable, Codable, CaseIterable {
    case `private`
    case `public`
    case secret

    /// FCM's enum name.
    public var fcmName: String { rawValue.uppercased() }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
