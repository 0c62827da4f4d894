/// The push gateway a device is reached through.
public enum Provider: String, Sendable, Codable, CaseIterable {
    case apns
    case fcm

    /// Reads a provider as the SDKs send it; `gcm` is FCM's former name and still sent by older apps.
    public init?(wireName: String) {
        switch wireName.lowercased() {
        case "apns": self = .apns
        case "fcm", "gcm": self = .fcm
        default: return nil
        }
    }
}
