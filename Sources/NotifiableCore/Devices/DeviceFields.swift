/// The device fields of a register or update request, validated and in stored form.
///
/// The Notifiable SDKs send fields under `device_token`; plain REST clients may send them at
/// the top level. Keys the service does not know are platform properties and are kept.
public struct DeviceFields: Sendable, Equatable {
    public var provider: Provider?
    public var token: String?
    public var name: FieldUpdate<String> = .unchanged
    public var userAlias: FieldUpdate<String> = .unchanged
    public var language: FieldUpdate<String> = .unchanged
    public var country: FieldUpdate<String> = .unchanged
    public var customProperties: FieldUpdate<[String: JSONValue]> = .unchanged
    /// Replaces the device's tags when sent (sorted, without duplicates; null or [] removes them);
    /// a request without `tags` leaves them, so the SDKs' re-registrations keep what the backend set.
    public var tags: FieldUpdate<[String]> = .unchanged
    /// An FCM device's operating system; nil leaves it as it is.
    public var platform: DevicePlatform?
    /// The APNs host an iPhone's token belongs to; nil leaves it as it is.
    public var apnsEnvironment: APNsEnvironment?
    /// The badge the app shows now (0 when it opens); nil leaves it.
    public var badge: Int?
    /// A browser subscription's keys (Web Push devices); nil leaves them.
    public var pushKeys: WebPushKeys?
    /// Merged key by key into what the device already has.
    public var platformProperties: [String: JSONValue] = [:]

    public static let maxTextLength = 255
    public static let maxCustomPropertiesBytes = 16 * 1024
    static let knownKeys: Set<String> = [
        "provider", "token", "name", "user_alias", "user", "language", "country",
        "custom_properties", "tags", "id", "device_token_id", DeviceFields.userTokenKey, "platform", "apns_environment", "badge",
    ]

    public init() {}

    /// A registration: provider and token are required, and a missing user alias anonymises
    /// the device (that is how the SDKs' anonymise and unregister calls are expressed).
    /// `storedProvider` is the provider of the app's device that already holds the token, if
    /// any: the Android SDK's `assignDeviceToUser` and `unassignDeviceFromUser` re-register a
    /// token the app has registered before without naming its provider (docs/compatibility.md).
    public static func registration(
        from body: JSONValue, storedProvider: Provider? = nil, webPushHosts: WebPushHosts = .browsers
    ) throws(ValidationError) -> DeviceFields {
        let reader = try DeviceFieldReader(body: body)
        var fields = DeviceFields()
        guard let providerName = try reader.string("provider"), !providerName.isEmpty else {
            guard let storedProvider else {
                throw reader.missing("provider", "Say which gateway reaches this device: \(Provider.wireNamesForMessages).")
            }
            fields.provider = storedProvider
            fields.token = try reader.string("token").map { token throws(ValidationError) in
                try PushToken.normalized(token, provider: storedProvider, field: reader.path("token"), webPushHosts: webPushHosts)
            }
            try fields.readOptionalFields(reader, provider: storedProvider)
            if fields.userAlias == .unchanged { fields.userAlias = .set(nil) }
            try fields.refuseBadgeOnRegistration(reader)
            return fields
        }
        guard let provider = Provider(wireName: providerName) else {
            throw ValidationError(
                code: "invalid_provider",
                message: "Unknown provider \"\(providerName)\"; use \(Provider.wireNamesForMessages).",
                field: reader.path("provider")
            )
        }
        fields.provider = provider
        guard let token = try reader.string("token") else {
            throw reader.missing("token", "The device's push token is required.")
        }
        fields.token = try PushToken.normalized(token, provider: provider, field: reader.path("token"), webPushHosts: webPushHosts)
        try fields.readOptionalFields(reader, provider: provider)
        if provider == .webpush, fields.pushKeys == nil {
            throw reader.missing("keys", "A browser's subscription needs its keys, {\"p256dh\": …, \"auth\": …}, as PushSubscription.toJSON() gives them.")
        }
        if fields.userAlias == .unchanged { fields.userAlias = .set(nil) }
        try fields.refuseBadgeOnRegistration(reader)
        return fields
    }

    /// A registration keeps the badge the device has; the app resets it with an update.
    private func refuseBadgeOnRegistration(_ reader: DeviceFieldReader) throws(ValidationError) {
        guard badge != nil else { return }
        throw ValidationError(
            code: "badge_on_update",
            message: "Set the badge with PATCH /api/v1/device_tokens/:id {\"badge\": 0} (the app sends it when it opens); "
                + "a registration keeps the device's badge.",
            field: reader.path("badge")
        )
    }

    /// The token a registration body names, as sent; nil when it names none or no provider
    /// (what `registration(from:storedProvider:)` needs the stored device's provider for).
    public static func tokenWithoutProvider(in body: JSONValue) -> String? {
        guard let reader = try? DeviceFieldReader(body: body) else { return nil }
        let provider = try? reader.string("provider")
        guard provider == nil || provider == "" else { return nil }
        guard case .string(let token)? = reader.fields["token"], !token.isEmpty else { return nil }
        return token
    }

    /// A partial update of a device reached through `provider`; only the fields sent change.
    public static func update(
        from body: JSONValue, provider: Provider, webPushHosts: WebPushHosts = .browsers
    ) throws(ValidationError) -> DeviceFields {
        let reader = try DeviceFieldReader(body: body)
        var fields = DeviceFields()
        if let providerName = try reader.string("provider"), !providerName.isEmpty,
            Provider(wireName: providerName) != provider
        {
            guard Provider(wireName: providerName) != nil else {
                throw ValidationError(
                    code: "invalid_provider",
                    message: "Unknown provider \"\(providerName)\"; use \(Provider.wireNamesForMessages).",
                    field: reader.path("provider")
                )
            }
            throw ValidationError(
                code: "provider_immutable",
                message: "A device's provider cannot change; register the new token with POST /api/v1/device_tokens instead.",
                field: reader.path("provider")
            )
        }
        if let token = try reader.string("token") {
            fields.token = try PushToken.normalized(token, provider: provider, field: reader.path("token"), webPushHosts: webPushHosts)
        }
        try fields.readOptionalFields(reader, provider: provider)
        // A new endpoint comes with its own keys: the old ones would encrypt what that browser cannot open.
        if provider == .webpush, fields.token != nil, fields.pushKeys == nil {
            throw reader.missing("keys", "A new endpoint needs its subscription's keys, {\"p256dh\": …, \"auth\": …}, sent with it.")
        }
        return fields
    }

    private mutating func readOptionalFields(_ reader: DeviceFieldReader, provider: Provider) throws(ValidationError) {
        try readDeviceKind(reader, provider: provider)
        try readBadge(reader)
        name = try reader.text("name")
        userAlias = try reader.text("user_alias")
        if userAlias == .unchanged, let alias = try reader.nestedUserAlias() {
            userAlias = alias
        }
        if case .set(let alias?) = userAlias, let problem = UserAlias.problem(alias) {
            throw ValidationError(code: "invalid_user_alias", message: "user_alias \(problem).", field: reader.path("user_alias"))
        }
        language = try reader.code("language", lengths: 2...3, standard: "an ISO 639 language code such as \"en\"")
        country = try reader.code("country", lengths: 2...2, standard: "an ISO 3166 alpha-2 country code such as \"gb\"")
        customProperties = try reader.customProperties()
        if let sent = reader.fields["tags"] { tags = .set(try DeviceTags.read(sent, path: reader.path("tags"))) }
        platformProperties = reader.fields.filter { !Self.knownKeys.contains($0.key) || $0.key == "platform" }
        if provider == .webpush, reader.fields["keys"] != nil {
            pushKeys = try WebPushKeys.read(reader.fields["keys"], path: reader.path("keys"))
            platformProperties["keys"] = nil
        }
    }
}

extension DeviceFields {
    /// `badge`: what the app's icon shows now, within `NotificationRequest.badgeRange`; the app sends 0 when it opens, so the next
    /// `"badge": "+1"` shows 1.
    fileprivate mutating func readBadge(_ reader: DeviceFieldReader) throws(ValidationError) {
        switch reader.fields["badge"] {
        case nil, .null?: return
        case .integer(let value)? where NotificationRequest.badgeRange.contains(Int(clamping: value)): badge = Int(value)
        case let other?:
            throw ValidationError(
                code: "invalid_badge",
                message: "\(reader.path("badge")) must be the badge the app shows, a whole number from "
                    + "\(NotificationRequest.badgeRange.lowerBound) to \(NotificationRequest.badgeRange.upperBound), not \(other.jsonText()).",
                field: reader.path("badge")
            )
        }
    }

    /// `platform` (`ios`/`android` in any case, FCM devices; an APNs device is an iPhone; kept as a
    /// platform property too) and `apns_environment` (`sandbox`/`production`, APNs devices).
    fileprivate mutating func readDeviceKind(_ reader: DeviceFieldReader, provider: Provider) throws(ValidationError) {
        // Before the service read it, `platform` was a platform property like any other key, and
        // apps may send other values ("iPadOS", "web"): those stay properties, as they were.
        if let name = try reader.string("platform"), provider == .fcm, let value = DevicePlatform(rawValue: name.lowercased()) {
            platform = value
        }
        if let name = try reader.string("apns_environment"), !name.isEmpty {
            guard let value = APNsEnvironment(rawValue: name.lowercased()) else {
                throw ValidationError(
                    code: "invalid_apns_environment",
                    message: "\(reader.path("apns_environment")) \"\(name)\" is not an APNs environment; use \"sandbox\" "
                        + "(debug builds) or \"production\" (App Store and TestFlight builds).",
                    field: reader.path("apns_environment")
                )
            }
            guard provider == .apns else {
                throw ValidationError(
                    code: "invalid_apns_environment",
                    message: "\(reader.path("apns_environment")) is for devices on APNs; an FCM device reaches Apple through Firebase.",
                    field: reader.path("apns_environment")
                )
            }
            apnsEnvironment = value
        }
    }
}

/// Reads typed values out of the request's field object, naming fields as the client sent them.
struct DeviceFieldReader {
    let fields: [String: JSONValue]
    let prefix: String

    init(body: JSONValue) throws(ValidationError) {
        guard var object = body.objectValue else {
            throw ValidationError(code: "invalid_body", message: "The request body must be a JSON object, not \(body.typeName).")
        }
        if let envelope = object["device_token"] {
            guard let inner = envelope.objectValue else {
                throw ValidationError(
                    code: "invalid_type",
                    message: "device_token must be an object holding the device's fields, not \(envelope.typeName).",
                    field: "device_token"
                )
            }
            object = inner
            prefix = "device_token."
        } else {
            prefix = ""
        }
        fields = object
        // PostgreSQL text and jsonb cannot hold U+0000: refuse it here, naming where it is.
        if let path = JSONValue.object(object).pathOfNullCharacter() {
            throw ValidationError(
                code: "invalid_character",
                message: "\(prefix)\(path) contains a NUL character (U+0000), which cannot be stored.",
                field: prefix + path
            )
        }
    }

    func path(_ key: String) -> String { prefix + key }

    func missing(_ key: String, _ message: String) -> ValidationError {
        ValidationError(code: "missing_field", message: message, field: path(key))
    }

    func typeError(_ key: String, expected: String, got value: JSONValue) -> ValidationError {
        ValidationError(code: "invalid_type", message: "\(path(key)) must be \(expected), not \(value.typeName).", field: path(key))
    }

    /// A string value; nil when absent or null.
    func string(_ key: String) throws(ValidationError) -> String? {
        switch fields[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        case let other?: throw typeError(key, expected: "a string", got: other)
        }
    }

    /// Free text of at most 255 characters; null or "" clears it.
    func text(_ key: String) throws(ValidationError) -> FieldUpdate<String> {
        guard fields[key] != nil else { return .unchanged }
        guard let value = try string(key), !value.isEmpty else { return .set(nil) }
        // Counted as PostgreSQL counts characters (code points), not as grapheme clusters.
        guard value.unicodeScalars.count <= DeviceFields.maxTextLength else {
            throw ValidationError(
                code: "too_long",
                message: "\(path(key)) is \(value.unicodeScalars.count) characters; at most \(DeviceFields.maxTextLength) are allowed.",
                field: path(key)
            )
        }
        return .set(value)
    }

    /// `"user": {"alias": "…"}`, the shape the SDKs use for status reports, accepted here too.
    func nestedUserAlias() throws(ValidationError) -> FieldUpdate<String>? {
        guard let user = fields["user"]?.objectValue, user["alias"] != nil else { return nil }
        let nested = DeviceFieldReader(fields: user, prefix: path("user."))
        return try nested.text("alias")
    }

    /// A short alphabetic code (language or country), stored lower-case; null or "" clears it.
    func code(_ key: String, lengths: ClosedRange<Int>, standard: String) throws(ValidationError) -> FieldUpdate<String> {
        guard fields[key] != nil else { return .unchanged }
        guard let value = try string(key), !value.isEmpty else { return .set(nil) }
        let isLetters = value.utf8.allSatisfy { (65...90).contains($0) || (97...122).contains($0) }
        guard isLetters, lengths.contains(value.utf8.count) else {
            let code = key == "language" ? "invalid_language" : "invalid_country"
            throw ValidationError(code: code, message: "\(path(key)) \"\(value)\" is not \(standard).", field: path(key))
        }
        return .set(value.lowercased())
    }

    /// An object, or a string holding a JSON object (the iOS SDK sends the latter); null clears.
    func customProperties() throws(ValidationError) -> FieldUpdate<[String: JSONValue]> {
        let key = "custom_properties"
        let object: [String: JSONValue]
        switch fields[key] {
        case nil: return .unchanged
        case .null?: return .set([:])
        case .object(let value)?: object = value
        case .string(let text)?:
            if text.isEmpty { return .set([:]) }
            guard let parsed = try? JSONValue.decode(Array(text.utf8)), let value = parsed.objectValue else {
                throw ValidationError(
                    code: "invalid_custom_properties",
                    message: "\(path(key)) must be a JSON object, or a string holding one; this string is not a JSON object.",
                    field: path(key)
                )
            }
            // The outer check saw only the escape's text; PostgreSQL's jsonb cannot hold U+0000 either.
            if let inner = parsed.pathOfNullCharacter() {
                throw ValidationError(
                    code: "invalid_character",
                    message: "\(path(key)), a string of JSON, has a NUL character (U+0000) at \(inner.isEmpty ? "its top" : inner), "
                        + "which cannot be stored.",
                    field: path(key)
                )
            }
            object = value
        case let other?:
            throw ValidationError(
                code: "invalid_custom_properties",
                message: "\(path(key)) must be a JSON object, or a string holding one, not \(other.typeName).",
                field: path(key)
            )
        }
        let size = JSONValue.object(object).jsonText().utf8.count
        guard size <= DeviceFields.maxCustomPropertiesBytes else {
            throw ValidationError(
                code: "too_large",
                message: "\(path(key)) is \(size) bytes as JSON; at most \(DeviceFields.maxCustomPropertiesBytes) are allowed.",
                field: path(key)
            )
        }
        return .set(object)
    }
}

extension DeviceFieldReader {
    init(fields: [String: JSONValue], prefix: String) {
        self.fields = fields
        self.prefix = prefix
    }
}
