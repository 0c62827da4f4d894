import Foundation

/// What ActivityKit does with a push to a Live Activity (`aps.event`).
public enum LiveActivityEvent: String, Sendable, Codable, CaseIterable {
    /// Starts an activity through a push-to-start token (iOS 17.2+): needs its attributes and an alert.
    case start
    case update
    case end
}

/// One push to a Live Activity, as APNs takes it (`apns-push-type: liveactivity`, topic
/// `<bundle id>.push-type.liveactivity`; docs/compatibility.md §12). The device ignores an update
/// whose `timestamp` is older than the last it applied, so the timestamp is when the service
/// accepted the event, never when it was sent: a retried or delayed push can never overwrite a
/// newer state.
public struct LiveActivityPush: Sendable, Equatable, Codable {
    public var event: LiveActivityEvent
    /// Seconds since 1970 when the event was accepted.
    public var timestamp: Int64
    /// The activity's `ContentState`, as the app decodes it.
    public var contentState: [String: JSONValue]?
    /// `start` only: the Swift type name of the app's `ActivityAttributes`, and their values.
    public var attributesType: String?
    public var attributes: [String: JSONValue]?
    /// Alerts the person on a start (required there) or an update.
    public var alert: LocalizedText?
    public var sound: String?
    /// Seconds since 1970 after which the system marks the activity out of date.
    public var staleDate: Int64?
    /// `end` only: when the ended activity leaves the lock screen.
    public var dismissalDate: Int64?
    /// Which of the app's activities the Dynamic Island shows first; any number for Live Activities.
    public var relevanceScore: Double?
    /// `high` goes at `apns-priority` 10, which draws on a per-device budget; `normal` (the default) at 5.
    public var priority: NotificationPriority
    /// For an iPhone registered through Firebase: the activity's own token, which FCM passes to APNs
    /// (`apns.live_activity_token`) while the message goes to the device's FCM token. A device on
    /// APNs is sent to the activity token itself (`deliveries.push_token`), so it has none here.
    public var token: String?
    /// A start through push-to-start to an activity with a broadcast channel: the channel the
    /// started activity listens to (`aps.input-push-channel`, iOS 18).
    public var inputPushChannel: String?

    public init(
        event: LiveActivityEvent, timestamp: Int64, contentState: [String: JSONValue]? = nil, attributesType: String? = nil,
        attributes: [String: JSONValue]? = nil, alert: LocalizedText? = nil, sound: String? = nil, staleDate: Int64? = nil,
        dismissalDate: Int64? = nil, relevanceScore: Double? = nil, priority: NotificationPriority = .normal
    ) {
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
        self.attributesType = attributesType
        self.attributes = attributes
        self.alert = alert
        self.sound = sound
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.priority = priority
    }

    enum CodingKeys: String, CodingKey {
        case event, timestamp, attributes, alert, sound, priority, token
        case inputPushChannel = "input_push_channel"
        case contentState = "content_state"
        case attributesType = "attributes_type"
        case staleDate = "stale_date"
        case dismissalDate = "dismissal_date"
        case relevanceScore = "relevance_score"
    }

    /// The `aps` dictionary ActivityKit reads.
    public var aps: [String: JSONValue] {
        var aps: [String: JSONValue] = ["event": .string(event.rawValue), "timestamp": .integer(timestamp)]
        if let contentState { aps["content-state"] = .object(contentState) }
        if let attributesType { aps["attributes-type"] = .string(attributesType) }
        if let attributes { aps["attributes"] = .object(attributes) }
        if let alert {
            var fields: [String: JSONValue] = [:]
            if let title = alert.title { fields["title"] = .string(title) }
            if let body = alert.message { fields["body"] = .string(body) }
            aps["alert"] = .object(fields)
        }
        if let sound { aps["sound"] = .string(sound) }
        if let staleDate { aps["stale-date"] = .integer(staleDate) }
        if let dismissalDate { aps["dismissal-date"] = .integer(dismissalDate) }
        if let relevanceScore { aps["relevance-score"] = .number(relevanceScore) }
        if let inputPushChannel { aps["input-push-channel"] = .string(inputPushChannel) }
        return aps
    }

    /// The APNs topic of Live Activity pushes for an app's bundle id.
    public static func topic(bundleID: String) -> String { bundleID + topicSuffix }
    public static let topicSuffix = ".push-type.liveactivity"
}
