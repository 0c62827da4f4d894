import Foundation

extension NotificationContent {
    /// The request keys that make up a notification's content.
    static let requestKeys: Set<String> = Set([
        "title", "message", "subtitle", "localized", "parameters", "sound", "badge", "thread_id", "category",
        "content_available", "mutable_content", "priority", "collapse_id", "expires_at", "ttl_seconds",
    ]).union(presentationKeys)

    /// Parameter keys the service or a gateway owns, in any case: `aps` (APNs), `n_id` (the
    /// notification id the SDKs read), `title` and `message` (the text every FCM push carries in
    /// `data`, which the Android SDK reads case-insensitively), and FCM's reserved data keys
    /// (`from`, `message_type`, `google…`, `gcm…`).
    public static func isReservedParameter(_ key: String) -> Bool {
        key.lowercased() == "aps" || isFCMReservedDataKey(key) || isAndroidSDKKey(key)
    }

    /// Whether FCM HTTP v1 refuses `key` in a message's data: `from`, `message_type`, and any key
    /// starting with `google` or `gcm`, in any case (docs/compatibility.md §9).
    public static func isFCMReservedDataKey(_ key: String) -> Bool {
        let lower = key.lowercased()
        return lower == "from" || lower == "message_type" || lower.hasPrefix("google") || lower.hasPrefix("gcm")
    }

    /// Whether the Android SDK reads `key` as `n_id`, `title` or `message`: it matches them with
    /// Java's `equalsIgnoreCase`, which also takes `ı` and `İ` for `i`, `ſ` for `s` and the Kelvin
    /// sign for `k` (their simple case mappings), so `tıtle` would reach it as a second title.
    public static func isAndroidSDKKey(_ key: String) -> Bool {
        ["n_id", "title", "message"].contains(javaCaseFolded(key))
    }

    /// `text` lower-cased as Java's `equalsIgnoreCase` compares it to ASCII: ASCII letters and the
    /// four other code points whose simple case mapping is an ASCII letter (U+0130 İ, U+0131 ı,
    /// U+017F ſ, U+212A K; `JavaCaseFoldingTests` checks there are no others).
    static func javaCaseFolded(_ text: String) -> String {
        var folded = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x41...0x5A: folded.append(Unicode.Scalar(scalar.value + 0x20)!)
            case 0x130, 0x131: folded.append("i")
            case 0x17F: folded.append("s")
            case 0x212A: folded.append("k")
            default: folded.append(scalar)
            }
        }
        return String(folded)
    }

    /// Whether `locale` is a stored locale key: `^[a-z]{2,3}(-[a-z]{2})?$`.
    static func isLocaleKey(_ locale: String) -> Bool {
        let parts = locale.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        func letters(_ part: Substring.UTF8View.SubSequence, _ lengths: ClosedRange<Int>) -> Bool {
            lengths.contains(part.count) && part.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }
        }
        switch parts.count {
        case 1: return letters(parts[0], 2...3)
        case 2: return letters(parts[0], 2...3) && letters(parts[1], 2...2)
        default: return false
        }
    }

    static func read(from reader: NotificationFieldReader, now: Date) throws(ValidationError) -> NotificationContent {
        typealias Limits = NotificationRequest
        var content = NotificationContent()
        content.text = try readText(reader)
        content.localized = try readLocalized(reader)
        content.parameters = try readParameters(reader)
        content.sound = try reader.text("sound", maxLength: Limits.maxShortTextLength)
        try content.readBadge(reader)
        content.threadID = try reader.text("thread_id", maxLength: Limits.maxShortTextLength)
        content.category = try reader.text("category", maxLength: Limits.maxShortTextLength)
        content.contentAvailable = try reader.bool("content_available") ?? false
        content.mutableContent = try reader.bool("mutable_content") ?? false
        if let priority = try reader.string("priority") {
            guard let value = NotificationPriority(rawValue: priority.lowercased()) else {
                throw ValidationError(
                    code: "invalid_priority",
                    message: "\(reader.path("priority")) \"\(priority)\" is not a priority; use \"high\" or \"normal\".",
                    field: reader.path("priority")
                )
            }
            content.priority = value
        }
        if let collapseID = try reader.string("collapse_id"), !collapseID.isEmpty {
            let bytes = collapseID.utf8.count
            guard bytes <= Limits.maxCollapseIDBytes else {
                throw NotificationFieldReader.tooLong(
                    reader.path("collapse_id"), length: bytes, max: Limits.maxCollapseIDBytes, unit: "bytes in UTF-8"
                )
            }
            // APNs carries it in the apns-collapse-id header, which cannot hold a line break or NUL:
            // refused here rather than retried at every send until the delivery is dead.
            guard !collapseID.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw ValidationError(
                    code: "invalid_collapse_id",
                    message: "\(reader.path("collapse_id")) holds a control character (a line break, tab or similar), "
                        + "which APNs cannot carry in its apns-collapse-id header; use letters, digits and punctuation.",
                    field: reader.path("collapse_id")
                )
            }
            content.collapseID = collapseID
        }
        try content.readPresentation(reader)
        let (expiresAt, ttl) = try readExpiry(reader, now: now)
        content.expiresAt = expiresAt
        if ttl == 0 {
            content.nowOrNever = true
            content.expiresAt = milliseconds(now.timeIntervalSince1970 + nowOrNeverGrace)
        }
        return content
    }

    /// An integer sets the badge; `"+N"` (1…99) raises each device's kept badge by N.
    private mutating func readBadge(_ reader: NotificationFieldReader) throws(ValidationError) {
        typealias Limits = NotificationRequest
        guard let member = reader.member("badge") else { return }
        if case .string(let text) = member.value {
            let digits = text.dropFirst()
            guard text.hasPrefix("+"), !digits.isEmpty, digits.allSatisfy({ ("0"..."9").contains($0) }), let step = Int(digits),
                (1...99).contains(step)
            else {
                throw ValidationError(
                    code: "invalid_badge",
                    message: "\(member.path) \"\(text)\" is not a badge; give a number to set it, or \"+1\" (up to \"+99\") to add to "
                        + "each device's badge.",
                    field: member.path
                )
            }
            badgeIncrement = step
            return
        }
        let badgeRange = Int64(Limits.badgeRange.lowerBound)...Int64(Limits.badgeRange.upperBound)
        badge = try reader.integer("badge", in: badgeRange).map { Int($0) }
    }

    private static func readText(_ reader: NotificationFieldReader) throws(ValidationError) -> LocalizedText {
        let max = NotificationRequest.maxTextLength
        return LocalizedText(
            title: try reader.text("title", maxLength: max),
            subtitle: try reader.text("subtitle", maxLength: max),
            message: try reader.text("message", maxLength: max)
        )
    }

    /// Variants keyed by locale; keys are normalised (`pt_BR` → `pt-br`), and a variant with no
    /// text at all is dropped, so devices of that locale get the default text.
    private static func readLocalized(_ reader: NotificationFieldReader) throws(ValidationError) -> [String: LocalizedText] {
        guard let member = reader.member("localized") else { return [:] }
        guard case .object(let variants) = member.value else {
            throw NotificationFieldReader.typeError(
                member.path, expected: "an object of texts keyed by locale (\"fr\", \"pt-br\")", got: member.value
            )
        }
        var result: [String: LocalizedText] = [:]
        var sentKeys: [String: String] = [:]
        for (key, value) in variants.sorted(by: { $0.key < $1.key }) {
            let path = "\(member.path).\(key)"
            let locale = key.lowercased().replacingOccurrences(of: "_", with: "-")
            guard isLocaleKey(locale) else {
                throw ValidationError(
                    code: "invalid_locale",
                    message: "\(path): \"\(key)\" is not a locale; use a language code (\"fr\") or a language and "
                        + "country (\"pt-br\").",
                    field: path
                )
            }
            if let other = sentKeys[locale] {
                throw ValidationError(
                    code: "conflicting_fields",
                    message: "\(member.path).\(other) and \(path) are both the locale \"\(locale)\"; send it once.",
                    field: path
                )
            }
            sentKeys[locale] = key
            if value == .null { continue }
            guard case .object(let fields) = value else {
                throw NotificationFieldReader.typeError(path, expected: "an object with title, subtitle and message", got: value)
            }
            let variantReader = NotificationFieldReader(object: fields, prefix: path + ".")
            try variantReader.refuseUnknownKeys(["title", "subtitle", "message"], in: "a localized text")
            let text = try readText(variantReader)
            if text != LocalizedText() { result[locale] = text }
        }
        return result
    }

    private static func readParameters(_ reader: NotificationFieldReader) throws(ValidationError) -> [String: JSONValue] {
        guard let member = reader.member("parameters") else { return [:] }
        guard case .object(let parameters) = member.value else {
            throw NotificationFieldReader.typeError(member.path, expected: "an object of custom payload keys", got: member.value)
        }
        for key in parameters.keys.sorted() where isReservedParameter(key) {
            throw ValidationError(
                code: "reserved_parameter",
                message: "\(member.path).\(key): \"\(key)\" is reserved (the service or a push gateway sets it: "
                    + "Android devices read the notification's own title, message and n_id from these keys); choose another key.",
                field: "\(member.path).\(key)"
            )
        }
        let size = JSONValue.object(parameters).jsonText().utf8.count
        guard size <= NotificationRequest.maxParametersBytes else {
            throw ValidationError(
                code: "too_large",
                message: "\(member.path) is \(size) bytes as JSON; at most \(NotificationRequest.maxParametersBytes) "
                    + "are allowed.",
                field: member.path
            )
        }
        return parameters
    }

    /// `expires_at` (an ISO 8601 date-time or seconds since 1970) or `ttl_seconds` from `now`, kept
    /// to the millisecond, which also makes the stored form round-trip exactly; and `ttl_seconds`
    /// as given, read once here.
    static func readExpiry(_ reader: NotificationFieldReader, now: Date) throws(ValidationError) -> (expiresAt: Date?, ttlSeconds: Int64?) {
        let ttl = try reader.integer("ttl_seconds", in: 0...NotificationRequest.maxTTLSeconds)
        guard let member = reader.member("expires_at") else {
            return (ttl.map { milliseconds(now.timeIntervalSince1970 + Double($0)) }, ttl)
        }
        if ttl != nil {
            throw ValidationError(
                code: "conflicting_fields",
                message: "Give either \(member.path) or \(reader.path("ttl_seconds")), not both.",
                field: reader.path("ttl_seconds")
            )
        }
        let seconds = try member.secondsSince1970()
        let expiry = milliseconds(seconds)
        guard expiry > now else {
            throw ValidationError(
                code: "already_expired",
                message: "\(member.path) is not in the future; the notification would never be delivered.",
                field: member.path
            )
        }
        return (expiry, nil)
    }

    static func milliseconds(_ secondsSince1970: Double) -> Date {
        Date(timeIntervalSince1970: (secondsSince1970 * 1_000).rounded() / 1_000)
    }
}

extension NotificationFieldReader.Member {
    /// An instant as clients send it: an ISO 8601 date-time with a zone, or seconds since 1970.
    func secondsSince1970(hint: String = "") throws(ValidationError) -> Double {
        let seconds: Double
        switch value {
        case .string(let text):
            guard let parsed = ISO8601Timestamp.secondsSince1970(text) else {
                throw ValidationError(
                    code: "invalid_date",
                    message: "\(path) \"\(text)\" is not an ISO 8601 date-time with a time zone, such as \"2026-11-22T10:00:00Z\"\(hint).",
                    field: path
                )
            }
            seconds = parsed
        case .integer(let integer):
            seconds = Double(integer)
        case .number(let number):
            seconds = number
        default:
            throw NotificationFieldReader.typeError(path, expected: "an ISO 8601 date-time string or a number of seconds since 1970", got: value)
        }
        guard seconds <= ISO8601Timestamp.latestSecondsSince1970 else {
            throw ValidationError(
                code: "invalid_date", message: "\(path) is after the year 9999; give seconds (not milliseconds) since 1970.", field: path
            )
        }
        return seconds
    }
}
