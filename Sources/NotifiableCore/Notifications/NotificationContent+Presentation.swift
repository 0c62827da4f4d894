import Foundation

/// The request fields of what a current iOS or Android app shows beyond text: interruption
/// levels, images, Android presentation, localization keys and per-platform overrides. Each rule
/// and its source is in docs/compatibility.md §12.
extension NotificationContent {
    static let presentationKeys: Set<String> = [
        "interruption_level", "relevance_score", "target_content_id", "filter_criteria", "critical_sound", "image_url",
        "android", "title_loc_key", "title_loc_args", "loc_key", "loc_args", "apns", "fcm",
    ]

    /// Longest `image_url`, in UTF-8 bytes.
    public static let maxImageURLBytes = 1024
    /// Most arguments of one localization key.
    public static let maxLocalizationArgs = 20
    /// APNs headers the service owns: the device and topic a push goes to, the id that makes a
    /// retry the same push, and the credentials.
    static let ownedAPNsHeaders: Set<String> = ["apns-topic", "apns-id", "authorization"]

    mutating func readPresentation(_ reader: NotificationFieldReader) throws(ValidationError) {
        let short = NotificationRequest.maxShortTextLength
        if let level = try reader.string("interruption_level") {
            guard let value = InterruptionLevel(rawValue: level) else {
                throw ValidationError(
                    code: "invalid_interruption_level",
                    message: "\(reader.path("interruption_level")) \"\(level)\" is not an interruption level; use "
                        + InterruptionLevel.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ") + ".",
                    field: reader.path("interruption_level")
                )
            }
            interruptionLevel = value
        }
        relevanceScore = try reader.fraction("relevance_score")
        targetContentID = try reader.text("target_content_id", maxLength: short)
        filterCriteria = try reader.text("filter_criteria", maxLength: short)
        try readCriticalSound(reader)
        imageURL = try Self.readImageURL(reader)
        android = try Self.readAndroid(reader)
        localizationKeys = try Self.readLocalizationKeys(reader)
        overrides = try Self.readOverrides(reader)
    }

    /// A critical alert needs its sound dictionary, and the dictionary makes the alert critical: each
    /// without the other is refused rather than sent as something else.
    private mutating func readCriticalSound(_ reader: NotificationFieldReader) throws(ValidationError) {
        guard let member = reader.member("critical_sound") else {
            if interruptionLevel == .critical {
                throw ValidationError(
                    code: "missing_critical_sound",
                    message: "A critical alert plays its sound even when the phone is muted, so it needs "
                        + "\(reader.path("critical_sound")): {\"name\": \"default\", \"volume\": 1.0}.",
                    field: reader.path("critical_sound")
                )
            }
            return
        }
        guard case .object(let fields) = member.value else {
            throw NotificationFieldReader.typeError(member.path, expected: "an object with name and volume", got: member.value)
        }
        let soundReader = NotificationFieldReader(object: fields, prefix: member.path + ".")
        try soundReader.refuseUnknownKeys(["name", "volume"], in: "a critical sound")
        let sound = CriticalSound(
            name: try soundReader.text("name", maxLength: NotificationRequest.maxShortTextLength) ?? "default",
            volume: try soundReader.fraction("volume") ?? 1
        )
        if interruptionLevel != nil && interruptionLevel != .critical {
            throw ValidationError(
                code: "conflicting_fields",
                message: "\(member.path) makes the alert critical, but \(reader.path("interruption_level")) is "
                    + "\"\(interruptionLevel!.rawValue)\"; use \"critical\" or leave the critical sound out.",
                field: member.path
            )
        }
        if self.sound != nil {
            throw ValidationError(
                code: "conflicting_fields",
                message: "Give either \(reader.path("sound")) or \(member.path), not both: a critical alert plays the critical sound.",
                field: member.path
            )
        }
        interruptionLevel = .critical
        criticalSound = sound
    }

    /// An absolute https URL with a host, at most 1,024 bytes.
    private static func readImageURL(_ reader: NotificationFieldReader) throws(ValidationError) -> String? {
        guard let text = try reader.string("image_url"), !text.isEmpty else { return nil }
        let path = reader.path("image_url")
        let bytes = text.utf8.count
        guard bytes <= maxImageURLBytes else {
            throw NotificationFieldReader.tooLong(path, length: bytes, max: maxImageURLBytes, unit: "bytes in UTF-8")
        }
        guard let url = URLComponents(string: text), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty,
            !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
        else {
            throw ValidationError(
                code: "invalid_image_url",
                message: "\(path) must be an https URL such as \"https://example.com/photo.jpg\": phones fetch images over https only.",
                field: path
            )
        }
        return text
    }

    private static func readAndroid(_ reader: NotificationFieldReader) throws(ValidationError) -> AndroidPresentation? {
        guard let member = reader.member("android") else { return nil }
        guard case .object(let fields) = member.value else {
            throw NotificationFieldReader.typeError(member.path, expected: "an object of Android presentation fields", got: member.value)
        }
        let android = NotificationFieldReader(object: fields, prefix: member.path + ".")
        try android.refuseUnknownKeys(
            ["channel_id", "icon", "color", "click_action", "visibility", "sticky", "notification_count"], in: "the Android presentation"
        )
        let short = NotificationRequest.maxShortTextLength
        var result = AndroidPresentation(
            channelID: try android.text("channel_id", maxLength: short),
            icon: try android.text("icon", maxLength: short),
            clickAction: try android.text("click_action", maxLength: short),
            sticky: try android.bool("sticky"),
            notificationCount: try android.integer("notification_count", in: 0...Int64(Int32.max)).map { Int($0) }
        )
        if let color = try android.string("color") {
            guard AndroidPresentation.isColor(color) else {
                throw ValidationError(
                    code: "invalid_color",
                    message: "\(android.path("color")) \"\(color)\" is not a colour as FCM takes it; use # and six hexadecimal digits, "
                        + "such as \"#ff6600\".",
                    field: android.path("color")
                )
            }
            result.color = color
        }
        if let visibility = try android.string("visibility") {
            guard let value = AndroidVisibility(rawValue: visibility.lowercased()) else {
                throw ValidationError(
                    code: "invalid_visibility",
                    message: "\(android.path("visibility")) \"\(visibility)\" is not a visibility; use \"private\", \"public\" or \"secret\".",
                    field: android.path("visibility")
                )
            }
            result.visibility = value
        }
        return result.isEmpty ? nil : result
    }

    private static func readLocalizationKeys(_ reader: NotificationFieldReader) throws(ValidationError) -> LocalizationKeys? {
        let short = NotificationRequest.maxShortTextLength
        let keys = LocalizationKeys(
            titleKey: try reader.text("title_loc_key", maxLength: short),
            titleArgs: try reader.strings("title_loc_args", maxCount: maxLocalizationArgs, maxLength: short),
            bodyKey: try reader.text("loc_key", maxLength: short),
            bodyArgs: try reader.strings("loc_args", maxCount: maxLocalizationArgs, maxLength: short)
        )
        for (args, key) in [(keys.titleArgs, "title_loc_key"), (keys.bodyArgs, "loc_key")] where args != nil {
            let argsKey = key.replacingOccurrences(of: "_key", with: "_args")
            guard key == "title_loc_key" ? keys.titleKey != nil : keys.bodyKey != nil else {
                throw ValidationError(
                    code: "missing_field",
                    message: "\(reader.path(argsKey)) fills the placeholders of \(reader.path(key)); give the key too.",
                    field: reader.path(key)
                )
            }
        }
        return keys == LocalizationKeys() ? nil : keys
    }

    /// `"apns": {"headers", "payload"}` and `"fcm": {"android", "apns", "data"}`.
    private static func readOverrides(_ reader: NotificationFieldReader) throws(ValidationError) -> PushOverrides? {
        var overrides = PushOverrides()
        if let member = reader.member("apns") {
            let apns = try objectReader(member, expected: "an object with headers and payload")
            try apns.refuseUnknownKeys(["headers", "payload"], in: "the APNs overrides")
            if let headers = apns.member("headers") {
                let fields = try objectReader(headers, expected: "an object of APNs request headers").members
                for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
                    let lower = name.lowercased()
                    guard lower.hasPrefix("apns-"), lower.utf8.count <= 64,
                        lower.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }),
                        !ownedAPNsHeaders.contains(lower)
                    else {
                        throw ValidationError(
                            code: "owned_field",
                            message: "\(value.path): the service sets \(name) itself (the topic, the push's id and the credentials "
                                + "are the service's); only other apns- headers may be given.",
                            field: value.path
                        )
                    }
                    guard case .string(let text) = value.value, !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
                    else {
                        throw NotificationFieldReader.typeError(value.path, expected: "a string without control characters", got: value.value)
                    }
                    try checkAPNsHeader(lower, text, path: value.path)
                    overrides.apnsHeaders[lower] = text
                }
            }
            if let payload = apns.member("payload") {
                overrides.apnsPayload = try payloadObject(payload)
            }
        }
        if let member = reader.member("fcm") {
            let fcm = try objectReader(member, expected: "an object with android, apns and data")
            try fcm.refuseUnknownKeys(["android", "apns", "data"], in: "the FCM overrides")
            if let android = fcm.member("android") {
                let object = try objectReader(android, expected: "an object merged into the FCM message's android").object
                if object["data"] != nil {
                    // AndroidConfig.data replaces the message's data, n_id, title and message with it.
                    throw ValidationError(
                        code: "owned_field",
                        message: "\(android.path).data would replace the message's data, which carries n_id, title and message; "
                            + "put extra keys in fcm.data.",
                        field: "\(android.path).data"
                    )
                }
                overrides.fcmAndroid = object
            }
            if let apns = fcm.member("apns") {
                let object = try objectReader(apns, expected: "an object merged into the FCM message's apns").object
                if case .object(let payload)? = object["payload"] {
                    try refuseNID(in: payload, at: "\(apns.path).payload")
                }
                overrides.fcmAPNs = object
            }
            if let data = fcm.member("data") {
                for (key, value) in try objectReader(data, expected: "an object of strings").members.sorted(by: { $0.key < $1.key }) {
                    guard case .string(let text) = value.value else {
                        throw NotificationFieldReader.typeError(value.path, expected: "a string (FCM data holds only strings)", got: value.value)
                    }
                    if isReservedParameter(key) {
                        throw ValidationError(
                            code: "owned_field",
                            message: "\(value.path): \"\(key)\" is a key the service or FCM owns (the Android SDK reads n_id, title and "
                                + "message in any case); choose another key.",
                            field: value.path
                        )
                    }
                    overrides.fcmData[key] = text
                }
            }
        }
        return overrides.isEmpty ? nil : overrides
    }

    /// The values APNs checks of the headers the service also writes (docs/compatibility.md §8):
    /// a wrong one would fail every push of the notification, or worse, a push type for another
    /// topic answers `DeviceTokenNotForTopic`, which reads as a dead token.
    private static func checkAPNsHeader(_ name: String, _ value: String, path: String) throws(ValidationError) {
        let valid: Bool
        let rule: String
        switch name {
        case "apns-push-type":
            valid = ["alert", "background"].contains(value)
            rule = "alert or background (other push types need their own topic; Live Activities have their own route)"
        case "apns-priority":
            valid = ["1", "5", "10"].contains(value)
            rule = "1, 5 or 10"
        case "apns-expiration":
            valid = !value.isEmpty && value.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } && value.utf8.count <= 12
            rule = "seconds since 1970, or 0"
        case "apns-collapse-id":
            valid = !value.isEmpty && value.utf8.count <= NotificationRequest.maxCollapseIDBytes
            rule = "1 to \(NotificationRequest.maxCollapseIDBytes) bytes"
        default:
            valid = value.utf8.count <= 1024
            rule = "at most 1,024 bytes"
        }
        guard valid else {
            throw ValidationError(code: "invalid_header", message: "\(path) \"\(value)\" is not what APNs takes: \(rule).", field: path)
        }
    }

    private static func objectReader(_ member: NotificationFieldReader.Member, expected: String) throws(ValidationError) -> NotificationFieldReader {
        guard case .object(let fields) = member.value else {
            throw NotificationFieldReader.typeError(member.path, expected: expected, got: member.value)
        }
        return NotificationFieldReader(object: fields, prefix: member.path + ".")
    }

    private static func payloadObject(_ member: NotificationFieldReader.Member) throws(ValidationError) -> [String: JSONValue] {
        guard case .object(let payload) = member.value else {
            throw NotificationFieldReader.typeError(member.path, expected: "an object merged into the APNs payload", got: member.value)
        }
        try refuseNID(in: payload, at: member.path)
        if let aps = payload["aps"], aps.objectValue == nil, aps != .null {
            throw NotificationFieldReader.typeError("\(member.path).aps", expected: "an object", got: aps)
        }
        return payload
    }

    private static func refuseNID(in payload: [String: JSONValue], at path: String) throws(ValidationError) {
        guard payload["n_id"] != nil else { return }
        throw ValidationError(
            code: "owned_field",
            message: "\(path).n_id is the notification's id, which the SDKs report back; the service sets it.",
            field: "\(path).n_id"
        )
    }
}

extension NotificationFieldReader {
    /// The reader's own members as an object (for fields kept as JSON).
    var object: [String: JSONValue] { members.mapValues(\.value) }

    /// A number from 0 to 1; nil when absent or null.
    func fraction(_ key: String) throws(ValidationError) -> Double? {
        guard let member = member(key) else { return nil }
        let value: Double
        switch member.value {
        case .integer(let integer): value = Double(integer)
        case .number(let number): value = number
        default: throw Self.typeError(member.path, expected: "a number from 0 to 1", got: member.value)
        }
        guard value.isFinite, (0...1).contains(value) else {
            throw ValidationError(code: "out_of_range", message: "\(member.path) is \(value); it must be from 0 to 1.", field: member.path)
        }
        return value
    }

    /// An array of at most `maxCount` strings of at most `maxLength` characters; nil when absent or null.
    func strings(_ key: String, maxCount: Int, maxLength: Int) throws(ValidationError) -> [String]? {
        guard let (items, path) = try array(key, expected: "an array of strings", maxCount: maxCount) else {
            return member(key) == nil ? nil : []
        }
        var result: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let text) = item else {
                throw Self.typeError("\(path).\(index)", expected: "a string", got: item)
            }
            guard text.unicodeScalars.count <= maxLength else {
                throw Self.tooLong("\(path).\(index)", length: text.unicodeScalars.count, max: maxLength)
            }
            result.append(text)
        }
        return result
    }
}
