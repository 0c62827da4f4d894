/// The push gateway a device is reached through. Every surface that lists providers (the API's
/// errors, the console, the CLI, the metrics) reads them from here rather than naming them.
public enum Provider: String, Sendable, Codable, CaseIterable {
    case apns
    case fcm
    /// Browsers, through the push service their subscription's endpoint names (RFC 8030).
    case webpush

    /// Reads a provider as the SDKs send it; `gcm` is FCM's former name and still sent by older apps.
    public init?(wireName: String) {
        switch wireName.lowercased() {
        case "apns": self = .apns
        case "fcm", "gcm": self = .fcm
        case "webpush", "web_push": self = .webpush
        default: return nil
        }
    }

    /// The gateway's name in messages and on the console.
    public var displayName: String {
        switch self {
        case .apns: "APNs"
        case .fcm: "FCM"
        case .webpush: "Web Push"
        }
    }

    /// What its devices are, for people reading counts ("iOS devices").
    public var reaches: String {
        switch self {
        case .apns: "iOS"
        case .fcm: "Android"
        case .webpush: "browsers"
        }
    }

    /// Whether its devices take a push that shows nothing (a background update, a stateful
    /// notification's sync signal). A browser must show every push it is sent
    /// (`userVisibleOnly`), so Web Push devices are sent none.
    public var takesSilentPushes: Bool { self != .webpush }

    /// The platform a device of this provider is, when it does not say (`ios`, `android`, `web`).
    public var defaultPlatform: String {
        switch self {
        case .apns: "ios"
        case .fcm: "android"
        case .webpush: "web"
        }
    }

    /// Its devices, as a column of counts is headed ("iOS devices", "Browsers").
    public var devicesHeading: String {
        switch self {
        case .apns: "iOS devices"
        case .fcm: "Android devices"
        case .webpush: "Browsers"
        }
    }

    /// The wire names a request may use, quoted and joined for error messages.
    public static var wireNamesForMessages: String {
        let names = allCases.map { "\"\($0.rawValue)\"" }
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }
}
