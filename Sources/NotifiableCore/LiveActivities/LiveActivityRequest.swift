import Foundation

/// The body of `POST /api/v1/live_activities`, validated: an event for one activity, by the id the
/// backend gave it. `update` and `end` go to the tokens the activity's devices registered for it;
/// `start` goes to the push-to-start tokens (iOS 17.2+) of `attributes_type` on the devices its
/// targeting names (`user_aliases` or `device_ids`).
public struct LiveActivityRequest: Sendable, Equatable {
    public var activityID: String
    /// The push, its `timestamp` left to the store, which sets it when the event is accepted.
    public var push: LiveActivityPush
    /// `start` only.
    public var targeting: Targeting

    public static let maxActivityIDLength = 255
    /// ActivityKit's limit on `content-state`.
    public static let maxContentStateBytes = 4096

    static let keys: Set<String> = [
        "event", "activity_id", "content_state", "attributes_type", "attributes", "alert", "stale_date", "dismissal_date",
        "relevance_score", "priority", "user_aliases", "device_ids",
    ]

    public static func parse(_ body: JSONValue, now: Date) throws(ValidationError) -> LiveActivityRequest {
        let reader = try NotificationFieldReader(body: body)
        try reader.refuseUnknownKeys(keys, in: "a Live Activity event")
        guard let eventName = try reader.string("event") else {
            throw ValidationError(code: "missing_field", message: "Say what happens: \"event\": \"start\", \"update\" or \"end\".", field: "event")
        }
        guard let event = LiveActivityEvent(rawValue: eventName) else {
            throw ValidationError(
                code: "invalid_event", message: "event \"\(eventName)\" is not a Live Activity event; use \"start\", \"update\" or \"end\".",
                field: reader.path("event"))
        }
        guard let activityID = try reader.text("activity_id", maxLength: maxActivityIDLength, allowEmpty: false) else {
            throw ValidationError(
                code: "missing_field", message: "activity_id names the activity: the id your backend gave it, which the app registers its token under.",
                field: "activity_id")
        }
        var push = LiveActivityPush(event: event, timestamp: 0)
        push.contentState = try object(reader, "content_state", maxBytes: maxContentStateBytes)
        if push.contentState == nil, event != .end {
            throw ValidationError(
                code: "missing_field", message: "content_state is the activity's ContentState; a \(event.rawValue) needs it.", field: "content_state")
        }
        push.relevanceScore = try number(reader, "relevance_score")
        push.staleDate = try date(reader, "stale_date", now: now)
        push.dismissalDate = try date(reader, "dismissal_date", now: now)
        if push.dismissalDate != nil, event != .end {
            throw ValidationError(code: "conflicting_fields", message: "dismissal_date is for an end event.", field: reader.path("dismissal_date"))
        }
        if let priority = try reader.string("priority") {
            guard let value = NotificationPriority(rawValue: priority) else {
                throw ValidationError(
                    code: "invalid_priority", message: "priority \"\(priority)\" is not a priority; use \"high\" (apns-priority 10) or \"normal\" (5).",
                    field: reader.path("priority"))
            }
            push.priority = value
        }
        try readAlert(reader, into: &push)
        var targeting = Targeting()
        if event == .start {
            push.attributesType = try reader.text("attributes_type", maxLength: NotificationRequest.maxShortTextLength, allowEmpty: false)
            push.attributes = try object(reader, "attributes", maxBytes: maxContentStateBytes)
            guard push.attributesType != nil, push.attributes != nil else {
                throw ValidationError(
                    code: "missing_field",
                    message: "A start names the app's ActivityAttributes type (attributes_type) and their values (attributes).",
                    field: push.attributesType == nil ? "attributes_type" : "attributes")
            }
            guard push.alert != nil else {
                throw ValidationError(code: "missing_field", message: "A start alerts the person: give alert with a title and body.", field: "alert")
            }
            targeting = try Targeting.read(from: reader)
            guard !targeting.userAliases.isEmpty || !targeting.deviceIDs.isEmpty else {
                throw ValidationError(
                    code: "no_target", message: "Say whose devices start the activity: user_aliases or device_ids.", field: "user_aliases")
            }
        } else {
            for key in ["attributes_type", "attributes", "user_aliases", "device_ids"] where reader.member(key) != nil {
                throw ValidationError(
                    code: "conflicting_fields",
                    message: "\(key) is for a start; an \(event.rawValue) goes to the devices that registered the activity's token.",
                    field: reader.path(key))
            }
        }
        try fitsAPNs(push)
        return LiveActivityRequest(activityID: activityID, push: push, targeting: targeting)
    }

    /// APNs takes 4,096 bytes of payload: the event as it will be sent (with the longest timestamp
    /// and notification id) must fit, or every push of it would fail.
    private static func fitsAPNs(_ push: LiveActivityPush) throws(ValidationError) {
        var sent = push
        sent.timestamp = 99_999_999_999
        let size = JSONValue.object(["aps": .object(sent.aps), "n_id": .integer(Int64.max)]).jsonText().utf8.count
        guard size <= maxPayloadBytes else {
            throw ValidationError(
                code: "too_large",
                message: "The push would be \(size) bytes; APNs takes \(maxPayloadBytes). Make content_state, attributes or the alert smaller.",
                field: push.event == .start ? "attributes" : "content_state")
        }
    }

    /// APNs's limit on a Live Activity push's payload.
    public static let maxPayloadBytes = 4096

    private static func object(_ reader: NotificationFieldReader, _ key: String, maxBytes: Int) throws(ValidationError) -> [String: JSONValue]? {
        guard let member = reader.member(key) else { return nil }
        guard case .object(let object) = member.value else {
            throw NotificationFieldReader.typeError(member.path, expected: "an object", got: member.value)
        }
        let size = member.value.jsonText().utf8.count
        guard size <= maxBytes else {
            throw ValidationError(code: "too_large", message: "\(member.path) is \(size) bytes as JSON; at most \(maxBytes).", field: member.path)
        }
        guard member.value.numbersAreFinite else {
            throw ValidationError(code: "invalid_number", message: "\(member.path) holds a number JSON cannot write.", field: member.path)
        }
        return object
    }

    private static func number(_ reader: NotificationFieldReader, _ key: String) throws(ValidationError) -> Double? {
        guard let member = reader.member(key) else { return nil }
        switch member.value {
        case .integer(let value): return Double(value)
        case .number(let value) where value.isFinite: return value
        default: throw NotificationFieldReader.typeError(member.path, expected: "a number", got: member.value)
        }
    }

    private static func date(_ reader: NotificationFieldReader, _ key: String, now: Date) throws(ValidationError) -> Int64? {
        guard let member = reader.member(key) else { return nil }
        let seconds = try member.secondsSince1970()
        guard seconds > now.timeIntervalSince1970 else {
            throw ValidationError(code: "already_past", message: "\(member.path) is not in the future.", field: member.path)
        }
        return Int64(seconds.rounded(.down))
    }

    private static func readAlert(_ reader: NotificationFieldReader, into push: inout LiveActivityPush) throws(ValidationError) {
        guard let member = reader.member("alert") else { return }
        guard case .object(let fields) = member.value else {
            throw NotificationFieldReader.typeError(member.path, expected: "an object with title, body and sound", got: member.value)
        }
        let alert = NotificationFieldReader(object: fields, prefix: member.path + ".")
        try alert.refuseUnknownKeys(["title", "body", "sound"], in: "a Live Activity alert")
        let text = LocalizedText(
            title: try alert.text("title", maxLength: NotificationRequest.maxTextLength),
            message: try alert.text("body", maxLength: NotificationRequest.maxTextLength)
        )
        guard text.title != nil || text.message != nil else {
            throw ValidationError(code: "missing_field", message: "\(member.path) needs a title or a body.", field: member.path)
        }
        push.alert = text
        push.sound = try alert.text("sound", maxLength: NotificationRequest.maxShortTextLength)
    }
}
