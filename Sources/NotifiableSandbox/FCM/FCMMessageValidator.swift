import NotifiableCore

/// What FCM's v1 send endpoint checks in a request body before it takes a message: the JSON shape of
/// `{"message": Message, "validate_only": bool}` as far as a sender to device tokens uses it, with Google's wording.
/// Field names may be written in snake_case or lowerCamelCase, as proto3 JSON allows; errors name the snake_case path.
enum FCMMessageValidator {
    /// A body FCM would take.
    struct Valid: Sendable, Equatable {
        var token: String
        var validateOnly: Bool
    }

    /// A 400 `INVALID_ARGUMENT`: the field at fault and Google's message about it.
    struct Violation: Error, Sendable, Equatable {
        /// The path of the field (`message.android.ttl`), empty when the body as a whole is wrong.
        var field: String
        var message: String
        /// FCM's own checks (recipient, data keys) add an FcmError `INVALID_ARGUMENT` detail; JSON type errors carry
        /// only the `google.rpc.BadRequest` one.
        var isFCMCheck = false
    }

    static let bodyFields: Set<String> = ["message", "validate_only"]
    static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "topic", "condition",
    ]
    static let notificationFields: Set<String> = ["title", "body", "image"]
    static let androidFields: Set<String> = [
        "collapse_key", "priority", "ttl", "restricted_package_name", "data", "notification", "fcm_options",
        "direct_boot_ok", "bandwidth_constrained_ok", "restricted_satellite_ok",
    ]
    static let androidNotificationStringFields: Set<String> = [
        "title", "body", "icon", "color", "sound", "tag", "click_action", "body_loc_key", "title_loc_key", "channel_id",
        "ticker", "image", "event_time",
    ]
    static let androidNotificationFields: Set<String> = androidNotificationStringFields.union([
        "body_loc_args", "title_loc_args", "sticky", "local_only", "notification_priority", "default_sound",
        "default_vibrate_timings", "default_light_settings", "vibrate_timings", "visibility", "notification_count",
        "light_settings", "bypass_proxy_notification", "proxy",
    ])
    /// Data keys FCM keeps for itself (besides those starting with `google` or `gcm`).

    static func validate(_ body: [UInt8]) -> Result<Valid, Violation> {
        guard JSONObjectValidator.isJSONObject(body), let object = (try? JSONValue.decode(body))?.objectValue else {
            return .failure(Violation(field: "", message: "Invalid JSON payload received. Unexpected token."))
        }
        do {
            return .success(try validate(body: object))
        } catch let violation as Violation {
            return .failure(violation)
        } catch {
            return .failure(Violation(field: "", message: "\(error)"))
        }
    }

    private static func validate(body: [String: JSONValue]) throws -> Valid {
        let body = try fields(of: body, at: "", known: bodyFields)
        let validateOnly = try bool(body["validate_only"], at: "validate_only") ?? false
        guard let messageValue = body["message"] else {
            throw Violation(
                field: "message", message: "Request contains an invalid argument: message is required.", isFCMCheck: true
            )
        }
        let message = try fields(of: object(messageValue, at: "message", type: "Message"), at: "message", known: messageFields)

        let token = try string(message["token"], at: "message.token") ?? ""
        let topic = try string(message["topic"], at: "message.topic") ?? ""
        let condition = try string(message["condition"], at: "message.condition") ?? ""
        let targets = [token, topic, condition].filter { !$0.isEmpty }.count
        guard targets > 0 else {
            throw Violation(field: "message", message: "Recipient of the message is not set.", isFCMCheck: true)
        }
        guard targets == 1 else {
            throw Violation(field: "message", message: "Exactly one of token, topic or condition must be set.", isFCMCheck: true)
        }
        guard !token.isEmpty else {
            throw Violation(
                field: topic.isEmpty ? "message.condition" : "message.topic",
                message: "The fake FCM gateway takes messages to a registration token (message.token) only.",
                isFCMCheck: true
            )
        }
        _ = try string(message["name"], at: "message.name")
        try dataMap(message["data"], at: "message.data")
        if let value = message["notification"] {
            let notification = try fields(
                of: object(value, at: "message.notification", type: "Notification"), at: "message.notification",
                known: notificationFields
            )
            for (name, value) in notification.sorted(by: { $0.key < $1.key }) {
                _ = try string(value, at: "message.notification.\(name)")
            }
        }
        try payloadFits(data: message["data"], notification: message["notification"])
        if let value = message["android"] { try android(value) }
        if let value = message["apns"] { try apns(value) }
        for name in ["webpush", "fcm_options"] {
            if let value = message[name] { _ = try object(value, at: "message.\(name)", type: "object") }
        }
        return Valid(token: token, validateOnly: validateOnly)
    }

    private static func android(_ value: JSONValue) throws {
        let path = "message.android"
        let android = try fields(of: object(value, at: path, type: "AndroidConfig"), at: path, known: androidFields)
        _ = try string(android["collapse_key"], at: "\(path).collapse_key")
        _ = try string(android["restricted_package_name"], at: "\(path).restricted_package_name")
        for name in ["direct_boot_ok", "bandwidth_constrained_ok", "restricted_satellite_ok"] {
            _ = try bool(android[name], at: "\(path).\(name)")
        }
        if let priority = android["priority"] {
            let text = try string(priority, at: "\(path).priority")
            guard let text, ["HIGH", "NORMAL"].contains(text.uppercased()) else {
                let type = "type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority"
                throw invalidValue(at: "\(path).priority", type: type, priority)
            }
        }
        if let ttl = android["ttl"] {
            guard case .string(let text) = ttl, isDuration(text) else {
                throw invalidValue(at: "\(path).ttl", type: "type.googleapis.com/google.protobuf.Duration", ttl)
            }
        }
        try dataMap(android["data"], at: "\(path).data")
        if let value = android["notification"] {
            let notificationPath = "\(path).notification"
            let notification = try fields(
                of: object(value, at: notificationPath, type: "AndroidNotification"), at: notificationPath,
                known: androidNotificationFields
            )
            for (name, value) in notification.sorted(by: { $0.key < $1.key }) {
                if androidNotificationStringFields.contains(name) { _ = try string(value, at: "\(notificationPath).\(name)") }
            }
            try androidNotificationValues(notification, at: notificationPath)
        }
        if let value = android["fcm_options"] { _ = try object(value, at: "\(path).fcm_options", type: "AndroidFcmOptions") }
    }

    static let visibilities: Set<String> = ["VISIBILITY_UNSPECIFIED", "PRIVATE", "PUBLIC", "SECRET"]
    static let notificationPriorities: Set<String> = [
        "PRIORITY_UNSPECIFIED", "PRIORITY_MIN", "PRIORITY_LOW", "PRIORITY_DEFAULT", "PRIORITY_HIGH", "PRIORITY_MAX",
    ]

    /// The typed fields of `AndroidNotification` (docs/compatibility.md §12): enums by their names, `color` as
    /// `#rrggbb` (the form the reference gives and Firebase's Admin SDKs check before sending), booleans, the count
    /// an integer, the localization arguments arrays of strings.
    private static func androidNotificationValues(_ notification: [String: JSONValue], at path: String) throws {
        if let color = try string(notification["color"], at: "\(path).color"), !AndroidPresentation.isColor(color) {
            throw Violation(field: "\(path).color", message: "Invalid value at '\(path).color': color must be in the form #RRGGBB.", isFCMCheck: true)
        }
        for (name, allowed, type) in [
            ("visibility", visibilities, "Visibility"), ("notification_priority", notificationPriorities, "NotificationPriority"),
        ] {
            guard let value = notification[name] else { continue }
            guard case .string(let text) = value, allowed.contains(text) else {
                throw invalidValue(at: "\(path).\(name)", type: "type.googleapis.com/google.firebase.fcm.v1.AndroidNotification.\(type)", value)
            }
        }
        for name in ["sticky", "local_only", "default_sound", "default_vibrate_timings", "default_light_settings"] {
            _ = try bool(notification[name], at: "\(path).\(name)")
        }
        if let count = notification["notification_count"] {
            guard case .integer(let value) = count, Int32(exactly: value) != nil else {
                throw invalidValue(at: "\(path).notification_count", type: "TYPE_INT32", count)
            }
        }
        for name in ["title_loc_args", "body_loc_args"] {
            guard let value = notification[name] else { continue }
            guard case .array(let items) = value else { throw invalidValue(at: "\(path).\(name)", type: "TYPE_STRING", value) }
            for (index, item) in items.enumerated() { _ = try string(item, at: "\(path).\(name)[\(index)]") }
        }
    }

    static let apnsFields: Set<String> = ["headers", "payload", "fcm_options", "live_activity_token"]

    /// `ApnsConfig`: headers a map of strings, the payload an object whose `aps` is an object, `fcm_options` its two
    /// strings. A background update (`content-available` with nothing to show) must go at `apns-priority` 5: FCM
    /// refuses a data message to an Apple device at priority 10 (docs/compatibility.md §12).
    private static func apns(_ value: JSONValue) throws {
        let path = "message.apns"
        let apns = try fields(of: object(value, at: path, type: "ApnsConfig"), at: path, known: apnsFields)
        var priority: String?
        if let headers = apns["headers"] {
            for (name, header) in try object(headers, at: "\(path).headers", type: "map<string, string>") {
                let text = try string(header, at: "\(path).headers[\(name)]")
                if name.lowercased() == "apns-priority" { priority = text }
            }
        }
        if let payload = apns["payload"] {
            let root = try object(payload, at: "\(path).payload", type: "google.protobuf.Struct")
            if let aps = root["aps"] {
                let fields = try object(aps, at: "\(path).payload.aps", type: "object")
                let background =
                    fields["content-available"] == .integer(1) && fields["alert"] == nil && fields["sound"] == nil
                    && fields["badge"] == nil
                if background, priority == "10" {
                    throw Violation(
                        field: "\(path).headers", message: "Data messages to Apple devices must be sent with apns-priority 5.", isFCMCheck: true
                    )
                }
            }
        }
        if let options = apns["fcm_options"] {
            let known: Set<String> = ["image", "analytics_label"]
            for (name, option) in try fields(of: object(options, at: "\(path).fcm_options", type: "ApnsFcmOptions"), at: "\(path).fcm_options", known: known) {
                _ = try string(option, at: "\(path).fcm_options.\(name)")
            }
        }
        _ = try string(apns["live_activity_token"], at: "\(path).live_activity_token")
    }

    /// A map of string to string, without FCM's reserved keys. Entries are numbered in key order.
    private static func dataMap(_ value: JSONValue?, at path: String) throws {
        guard let value, value != .null else { return }
        let data = try object(value, at: path, type: "map<string, string>")
        for (index, (key, value)) in data.sorted(by: { $0.key < $1.key }).enumerated() {
            guard case .string = value else { throw invalidValue(at: "\(path)[\(index)].value", type: "TYPE_STRING", value) }
            if NotificationContent.isFCMReservedDataKey(key) {
                throw Violation(
                    field: path,
                    message: "Invalid data payload key \(JSONText.quoted(key)) at '\(path)': from, message_type "
                        + "and keys starting with google or gcm are reserved.",
                    isFCMCheck: true
                )
            }
        }
    }

    /// FCM's limit on what a message carries: 4096 bytes of data and notification, keys and values
    /// counted ("message too big" is one of the causes of INVALID_ARGUMENT on Google's error-codes page;
    /// docs/compatibility.md §9).
    static let maximumPayloadBytes = 4096

    private static func payloadFits(data: JSONValue?, notification: JSONValue?) throws {
        let members = (data?.objectValue ?? [:]).map { $0 } + (notification?.objectValue ?? [:]).map { $0 }
        let size = members.reduce(0) { total, member in
            guard case .string(let text) = member.value else { return total }
            return total + member.key.utf8.count + text.utf8.count
        }
        guard size <= maximumPayloadBytes else {
            throw Violation(
                field: "message", message: "Message is too big: \(size) bytes of data and notification, at most \(maximumPayloadBytes).",
                isFCMCheck: true
            )
        }
    }

    // MARK: JSON shapes

    /// The members of an object keyed by their snake_case names; a name the message type does not have is refused.
    private static func fields(
        of object: [String: JSONValue], at path: String, known: Set<String>
    ) throws -> [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        for (name, value) in object.sorted(by: { $0.key < $1.key }) {
            let canonical = snakeCase(name)
            guard known.contains(canonical) else {
                let place = path.isEmpty ? "" : " at '\(path)'"
                throw Violation(
                    field: path,
                    message: "Invalid JSON payload received. Unknown name \(JSONText.quoted(name))\(place): Cannot find field."
                )
            }
            if value != .null { fields[canonical] = value }  // proto3 JSON reads null as "not set"
        }
        return fields
    }

    private static func object(_ value: JSONValue, at path: String, type: String) throws -> [String: JSONValue] {
        guard let object = value.objectValue else { throw invalidValue(at: path, type: type, value) }
        return object
    }

    private static func string(_ value: JSONValue?, at path: String) throws -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let value?: throw invalidValue(at: path, type: "TYPE_STRING", value)
        }
    }

    private static func bool(_ value: JSONValue?, at path: String) throws -> Bool? {
        switch value {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        case let value?: throw invalidValue(at: path, type: "TYPE_BOOL", value)
        }
    }

    private static func invalidValue(at path: String, type: String, _ value: JSONValue) -> Violation {
        Violation(field: path, message: "Invalid value at '\(path)' (\(type)), \(value.jsonText())")
    }

    /// `lowerCamelCase` → `lower_camel_case`; snake_case names are unchanged.
    static func snakeCase(_ name: String) -> String {
        var result = ""
        for character in name {
            if character.isUppercase {
                result += "_" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// A protobuf Duration in JSON: seconds with up to nine decimals and an `s`, such as `3600s` or `1.5s`.
    static func isDuration(_ text: String) -> Bool {
        guard text.hasSuffix("s") else { return false }
        let number = text.dropLast()
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty, parts[0].allSatisfy(\.isASCIIDigit) else { return false }
        if parts.count == 2 {
            guard (1...9).contains(parts[1].count), parts[1].allSatisfy(\.isASCIIDigit) else { return false }
        }
        return true
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
