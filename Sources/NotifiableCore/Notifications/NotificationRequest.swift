import Crypto
import Foundation

/// The body of `POST /api/v1/notifications`, validated and in domain form.
///
/// Fields sit at the top level or under `"notification"`; both may be used in one body (say the
/// content under `notification` and the targeting beside it), but one key may not appear in both
/// places. Errors name a field as the client sent it (`notification.title`, `filters.0.op`).
/// `null` counts as absent everywhere, and so do empty arrays.
public struct NotificationRequest: Sendable, Equatable {
    public var content: NotificationContent
    public var targeting: Targeting
    /// Makes a retried request send nothing twice; 1…255 characters.
    public var idempotencyKey: String?
    /// Set when each targeted user keeps a copy with read and action state.
    public var stateful: StatefulOptions?
    /// Set when it goes out later than at once.
    public var schedule: SendSchedule?
    /// Its content is too big for a push: the app's backend uploads it, the push carries
    /// `"rich": true`, and the devices it reached fetch it.
    public var rich: Bool
    /// What the body left unsaid, for the app's `PushDefaults` to fill.
    public var unsaid: Unsaid

    /// iOS flags a body may leave to the app's defaults (an expiry it leaves unsaid is a nil
    /// `content.expiresAt`).
    public struct Unsaid: Sendable, Equatable {
        public var mutableContent: Bool
        public var contentAvailable: Bool

        public init(mutableContent: Bool = true, contentAvailable: Bool = true) {
            self.mutableContent = mutableContent
            self.contentAvailable = contentAvailable
        }
    }

    public init(
        content: NotificationContent, targeting: Targeting, idempotencyKey: String? = nil, stateful: StatefulOptions? = nil,
        schedule: SendSchedule? = nil, rich: Bool = false, unsaid: Unsaid = Unsaid()
    ) {
        self.rich = rich
        self.unsaid = unsaid
        self.content = content
        self.targeting = targeting
        self.idempotencyKey = idempotencyKey
        self.stateful = stateful
        self.schedule = schedule
    }

    /// Longest `title`, `subtitle` and `message`, in characters.
    public static let maxTextLength = 2048
    /// Longest `thread_id`, `category`, `sound`, user alias, filter property and idempotency key, in characters.
    public static let maxShortTextLength = 255
    /// Largest `parameters` object, in bytes of compact JSON.
    public static let maxParametersBytes = 3 * 1024
    /// Longest `collapse_id` in UTF-8 bytes (APNs' `apns-collapse-id` limit).
    public static let maxCollapseIDBytes = 64
    public static let badgeRange: ClosedRange<Int> = 0...99_999
    /// Longest `ttl_seconds`: 28 days, FCM's limit.
    public static let maxTTLSeconds: Int64 = 2_419_200
    /// Most entries in `user_aliases`, and in `device_ids`.
    public static let maxRecipients = 10_000
    public static let maxFilters = 20
    /// Most values of one `in` filter.
    public static let maxFilterValues = 1_000

    /// Every key a body may hold (at the top level or under `notification`).
    public static let knownKeys: Set<String> = NotificationContent.requestKeys
        .union(Targeting.requestKeys)
        .union(["idempotency_key", "stateful", "send_at", "local_time", "rich"])

    /// Validates a request body. `now` is the clock against which `expires_at` must lie in the
    /// future and from which `ttl_seconds` counts.
    public static func parse(_ body: JSONValue, now: Date) throws(ValidationError) -> NotificationRequest {
        let reader = try NotificationFieldReader(body: body)
        try reader.refuseUnknownKeys(knownKeys, hints: unknownKeyHints)
        var content = try NotificationContent.read(from: reader, now: now)
        let schedule = try SendSchedule.read(from: reader, now: now)
        if let schedule {
            try content.fitExpiry(to: schedule, reader: reader, now: now)
        }
        let targeting = try Targeting.read(from: reader)
        let idempotencyKey = try reader.text("idempotency_key", maxLength: maxShortTextLength, allowEmpty: false)
        let stateful = try StatefulOptions.read(from: reader, now: now)
        let rich = try reader.bool("rich") ?? false
        if content.imageURL != nil, content.showsAlert, reader.member("mutable_content") == nil {
            // The app's notification service extension fetches the image: it runs only with mutable-content.
            content.mutableContent = true
        }
        if rich {
            // The push says so (the SDKs and apps read it beside n_id); on iOS a notification
            // service extension may then fetch the content before the alert shows.
            content.parameters["rich"] = .bool(true)
            if content.showsAlert { content.mutableContent = true }
        }

        guard content.showsOrDoesSomething else {
            throw ValidationError(
                code: "empty_notification",
                message: "The notification would show and do nothing: give a title or message (by default or in a "
                    + "localized variant), a badge, a sound, or \"content_available\": true for a background update."
            )
        }
        guard !targeting.isEmpty else {
            throw ValidationError(
                code: "no_target",
                message: "Say who gets the notification: send \"user_aliases\" (an array of user aliases), "
                    + "\"device_ids\" (an array of device ids), \"filters\" (an array of conditions on devices), "
                    + "\"tag_expression\" (such as \"group:beta && !lang:fr\"), or \"all\": true for every device of the app."
            )
        }
        if stateful != nil, schedule != nil {
            throw ValidationError(
                code: "conflicting_fields",
                message: "A stateful notification is sent at once: its users' copies exist from the moment it is accepted, so it "
                    + "cannot wait for send_at. Send it at its time instead.",
                field: reader.path("send_at")
            )
        }
        if stateful != nil,
            targeting.userAliases.isEmpty || !targeting.deviceIDs.isEmpty || !targeting.filters.isEmpty
                || targeting.tagExpression != nil || targeting.all
        {
            throw ValidationError(
                code: "stateful_needs_user_aliases",
                message: "A stateful notification keeps a copy per user, so it targets users: send \"user_aliases\" alone, "
                    + "without \"device_ids\", \"filters\", \"tag_expression\" or \"all\".",
                field: reader.path("stateful")
            )
        }
        let unsaid = Unsaid(
            mutableContent: reader.member("mutable_content") == nil && !rich && content.imageURL == nil,
            contentAvailable: reader.member("content_available") == nil
        )
        return NotificationRequest(
            content: content, targeting: targeting, idempotencyKey: idempotencyKey, stateful: stateful, schedule: schedule, rich: rich,
            unsaid: unsaid
        )
    }

    /// The request with what it left unsaid taken from the app's defaults:
    /// - no `ttl_seconds`/`expires_at`: it expires the app's time to live after it is sent (the
    ///   last time zone's send for `local_time`), so APNs stores it for an offline iPhone instead
    ///   of trying once (`apns-expiration: 0` is only ever what `"ttl_seconds": 0` asks for);
    /// - no `mutable_content`: the app's, for a notification that shows an alert (APNs runs a
    ///   service extension only for those);
    /// - no `content_available`: the app's;
    /// - the Android style is always the app's;
    /// - no `android.channel_id`: the app's default channel, when it has one.
    public func applying(_ defaults: PushDefaults, now: Date) -> NotificationRequest {
        var request = self
        if content.expiresAt == nil {
            let sent = schedule.map { max($0.latestInstant, now) } ?? now
            request.content.expiresAt = NotificationContent.milliseconds(sent.timeIntervalSince1970 + Double(defaults.timeToLiveSeconds))
        }
        if unsaid.mutableContent, defaults.mutableContent, content.showsAlert { request.content.mutableContent = true }
        if unsaid.contentAvailable, defaults.contentAvailable { request.content.contentAvailable = true }
        request.content.androidStyle = defaults.androidStyle
        if let channel = defaults.androidChannelID, request.content.android?.channelID == nil {
            request.content.android = request.content.android ?? AndroidPresentation()
            request.content.android?.channelID = channel
        }
        return request
    }

    /// What makes two bodies the same request for an idempotency key: SHA-256 of the body as
    /// compact JSON with sorted keys, without `idempotency_key` (at the top level or under
    /// `notification`), so a retry with the key in the header or the body, or with other
    /// whitespace or key order, is the same request, and any other change is not.
    public static func digest(of body: JSONValue) -> [UInt8] {
        guard case .object(var object) = body else { return Array(SHA256.hash(data: Array(body.jsonText().utf8))) }
        object["idempotency_key"] = nil
        if case .object(var nested)? = object["notification"] {
            nested["idempotency_key"] = nil
            object["notification"] = .object(nested)
        }
        return Array(SHA256.hash(data: Array(JSONValue.object(object).jsonText().utf8)))
    }

    /// Likely meanings of keys clients send by mistake, named in the `unknown_field` message.
    static let unknownKeyHints: [String: String] = [
        "body": "message", "text": "message", "alert": "message",
        "ttl": "ttl_seconds", "time_to_live": "ttl_seconds", "expiry": "expires_at",
        "expiration": "expires_at", "expires": "expires_at",
        "schedule": "send_at", "scheduled_at": "send_at", "send_after": "send_at", "deliver_at": "send_at",
        "timezone": "local_time", "time_zone": "local_time",
        "user_alias": "user_aliases", "users": "user_aliases", "aliases": "user_aliases",
        "device_id": "device_ids", "device_token_ids": "device_ids", "devices": "device_ids",
        "filter": "filters", "tags": "tag_expression", "tag": "tag_expression",
        "data": "parameters", "custom": "parameters", "payload": "parameters",
        "thread": "thread_id", "collapse_key": "collapse_id",
        "locales": "localized", "translations": "localized",
    ]
}

extension NotificationContent {
    /// A scheduled notification's `ttl_seconds` counts from when it is sent, and its expiry must
    /// come after the send; with `local_time` the send differs per device, so `ttl_seconds` is
    /// refused there.
    mutating func fitExpiry(to schedule: SendSchedule, reader: NotificationFieldReader, now: Date) throws(ValidationError) {
        guard let expiresAt else { return }
        if reader.member("ttl_seconds") != nil {
            guard case .at(let sendAt) = schedule else {
                throw ValidationError(
                    code: "conflicting_fields",
                    message: "With local_time each device's send time differs; give expires_at instead of ttl_seconds.",
                    field: reader.path("ttl_seconds")
                )
            }
            self.expiresAt = expiresAt.addingTimeInterval(sendAt.timeIntervalSince(now))
            return
        }
        guard expiresAt > schedule.latestInstant else {
            throw ValidationError(
                code: "expires_before_sending",
                message: "\(reader.path("expires_at")) is before \(reader.path("send_at"))"
                    + (schedule.latestInstant > schedule.earliestInstant ? " comes in the last time zone (UTC−12)" : "")
                    + "; the notification would not reach every device.",
                field: reader.path("expires_at")
            )
        }
    }

    /// Whether it shows an alert (a title or message) anywhere.
    var showsAlert: Bool {
        func hasText(_ text: LocalizedText) -> Bool { text.title != nil || text.message != nil }
        return hasText(text) || localized.values.contains(where: hasText) || (localizationKeys?.showsText ?? false)
    }

    /// Whether a device would show or do anything on receiving it.
    var showsOrDoesSomething: Bool {
        showsAlert || contentAvailable || badge != nil || badgeIncrement != nil || sound != nil || criticalSound != nil
    }
}
