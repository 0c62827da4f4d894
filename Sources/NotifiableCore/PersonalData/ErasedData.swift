/// What erasing a person removed from an app, by kind: the answer to `DELETE /api/v1/users/:alias`,
/// and what the console and CLI show. Zero everywhere when the app held nothing about the alias.
public struct ErasedData: Sendable, Equatable, Codable {
    /// Devices that had the alias at any time, now anonymous rows without token, name or properties.
    public var devices: Int64 = 0
    /// Their history events.
    public var deviceEvents: Int64 = 0
    /// Their deliveries, kept without any content or token so notification counters stay exact.
    public var deliveriesAnonymised: Int64 = 0
    /// Waiting deliveries to them, cancelled.
    public var deliveriesCancelled: Int64 = 0
    public var userNotifications: Int64 = 0
    public var userNotificationChanges: Int64 = 0
    public var userFeeds: Int64 = 0
    /// Notifications whose targeting named the alias, which no longer does.
    public var notificationsRetargeted: Int64 = 0
    public var sandboxPushes: Int64 = 0
    public var webhookEvents: Int64 = 0
    public var liveActivityTokens: Int64 = 0
    public var pushToStartTokens: Int64 = 0

    public init() {}

    public var isEmpty: Bool { self == ErasedData() }

    enum CodingKeys: String, CodingKey {
        case devices
        case deviceEvents = "device_events"
        case deliveriesAnonymised = "deliveries_anonymised"
        case deliveriesCancelled = "deliveries_cancelled"
        case userNotifications = "user_notifications"
        case userNotificationChanges = "user_notification_changes"
        case userFeeds = "user_feeds"
        case notificationsRetargeted = "notifications_retargeted"
        case sandboxPushes = "sandbox_pushes"
        case webhookEvents = "webhook_events"
        case liveActivityTokens = "live_activity_tokens"
        case pushToStartTokens = "push_to_start_tokens"
    }
}
