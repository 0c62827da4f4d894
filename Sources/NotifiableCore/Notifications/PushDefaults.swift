import Foundation

/// An app's defaults for what a notification leaves unsaid, applied when it is accepted
/// (`NotificationRequest.applying(_:now:)`), so a notification keeps the presentation it was
/// accepted with even if the app's settings change while it is sending.
public struct PushDefaults: Sendable, Equatable {
    /// How FCM pushes present themselves on Android.
    public var androidStyle: AndroidStyle
    /// How long a notification without `ttl_seconds` or `expires_at` may wait for an offline
    /// device: APNs stores it until then (`apns-expiration`), FCM for as long (`android.ttl`).
    public var timeToLiveSeconds: Int64
    /// `mutable-content` for notifications that show an alert and do not say: lets the app's
    /// notification service extension run, and so the iOS SDK report them delivered.
    public var mutableContent: Bool
    /// `content-available` for notifications that do not say: wakes the app in the background
    /// (with the `remote-notification` background mode), where the iOS SDK reports receipt.
    public var contentAvailable: Bool
    /// The Android notification channel of notifications that name none (Android 8+ files every
    /// notification under a channel; without one, the app's manifest default).
    public var androidChannelID: String?

    /// Four weeks: FCM's own default and longest time to live.
    public static let defaultTimeToLiveSeconds = NotificationRequest.maxTTLSeconds
    /// The range `default_ttl_seconds` may take: from a minute to FCM's longest.
    public static let timeToLiveRange: ClosedRange<Int64> = 60...defaultTimeToLiveSeconds

    public init(
        androidStyle: AndroidStyle = .data, timeToLiveSeconds: Int64 = Self.defaultTimeToLiveSeconds,
        mutableContent: Bool = false, contentAvailable: Bool = false, androidChannelID: String? = nil
    ) {
        self.androidChannelID = androidChannelID
        self.androidStyle = androidStyle
        self.timeToLiveSeconds = timeToLiveSeconds
        self.mutableContent = mutableContent
        self.contentAvailable = contentAvailable
    }
}
