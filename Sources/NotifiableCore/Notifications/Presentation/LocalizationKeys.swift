/// Text the app translates from its own strings: APNs `alert.title-loc-key`/`-args` and
/// `loc-key`/`-args` (Localizable.strings), FCM `title_loc_key`/`-args` and
/// `body_loc_key`/`-args` (the app's string resources).
public struct LocalizationKeys: Sendable, Equatable, Codable {
    public var titleKey: String?
    public var titleArgs: [String]?
    public var bodyKey: String?
    public var bodyArgs: [String]?

    public init(titleKey: String? = nil, titleArgs: [String]? = nil, bodyKey: String? = nil, bodyArgs: [String]? = nil) {
        self.titleKey = titleKey
        self.titleArgs = titleArgs
        self.bodyKey = bodyKey
        self.bodyArgs = bodyArgs
    }

    enum CodingKeys: String, CodingKey {
        case titleKey = "title_loc_key"
        case titleArgs = "title_loc_args"
        case bodyKey = "loc_key"
        case bodyArgs = "loc_args"
    }

    /// Whether the device has text to show from these keys.
    public var showsText: Bool { titleKey != nil || bodyKey != nil }
}
