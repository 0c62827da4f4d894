import Foundation

/// A delivery a worker has claimed: everything needed to send it, read in one row by the
/// queue's claim. A value type with no transport, so senders take it without knowing the store.
public struct ClaimedDelivery: Sendable {
    public let id: Int64
    public let notificationID: Int64
    public let appID: Int64
    public let deviceID: Int64
    /// This claim's attempt number (1 for the first send). Outcomes are recorded only while
    /// the row still carries it, so a worker whose lease ran out cannot overwrite a newer claim.
    public let attempt: Int
    public let provider: Provider
    public let token: String
    public let language: String?
    public let country: String?
    /// An FCM device's operating system (nil: Android).
    public let platform: DevicePlatform?
    /// The APNs host a device's token belongs to (nil: the app's).
    public let apnsEnvironment: APNsEnvironment?
    /// The badge this device's push carries when the notification counts badges up (`"badge": "+1"`).
    public let badge: Int?
    public let content: NotificationContent
    public let expiresAt: Date?
    /// The app delivers in sandbox mode: to the built-in fake gateways, recording each push.
    public let sandbox: Bool
    /// Payloads written from `content`, shared with the batch's other deliveries of the same content.
    /// Whoever makes deliveries shares one only among deliveries of one content and notification id,
    /// as the claim does; a fresh one is always safe.
    public let rendered: RenderedPayloads

    public init(
        id: Int64, notificationID: Int64, appID: Int64, deviceID: Int64, attempt: Int, provider: Provider, token: String,
        language: String?, country: String?, content: NotificationContent, expiresAt: Date?, sandbox: Bool = false,
        rendered: RenderedPayloads = RenderedPayloads(), platform: DevicePlatform? = nil, apnsEnvironment: APNsEnvironment? = nil,
        badge: Int? = nil
    ) {
        self.badge = badge
        self.platform = platform
        self.apnsEnvironment = apnsEnvironment
        self.id = id
        self.notificationID = notificationID
        self.appID = appID
        self.deviceID = deviceID
        self.attempt = attempt
        self.provider = provider
        self.token = token
        self.language = language
        self.country = country
        self.content = content
        self.expiresAt = expiresAt
        self.sandbox = sandbox
        self.rendered = rendered
    }
}
