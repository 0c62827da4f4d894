import NotifiableCore
import Testing

private let fcmToken = "fcm-token-123"

/// A registration body with the device fields under `device_token`, plus `extra` members.
private func enveloped(_ extra: String = "", provider: String = "fcm", token: String = fcmToken) -> String {
    #"{"device_token": {"provider": "\#(provider)", "token": "\#(token)"\#(extra.isEmpty ? "" : ", " + extra)}}"#
}

private func register(_ text: String) throws -> DeviceFields {
    let body = try json(text)
    return try DeviceFields.registration(from: body)
}

private func registrationError(_ text: String) throws -> ValidationError? {
    let body = try json(text)
    return validationError { () throws(ValidationError) in try DeviceFields.registration(from: body) }
}

private func updateError(_ text: String, provider: Provider) throws -> ValidationError? {
    let body = try json(text)
    return validationError { () throws(ValidationError) in try DeviceFields.update(from: body, provider: provider) }
}

@Suite struct DeviceFieldsRegistrationTests {
    @Test func readsFieldsUnderDeviceToken() throws {
        let fields = try register(
            #"{"device_token": {"provider": "apns", "token": "\#(hex64)", "name": "Ann's phone", "user_alias": "ann", "language": "en", "country": "gb"}}"#
        )
        #expect(fields.provider == .apns)
        #expect(fields.token == hex64)
        #expect(fields.name == .set("Ann's phone"))
        #expect(fields.userAlias == .set("ann"))
        #expect(fields.language == .set("en"))
        #expect(fields.country == .set("gb"))
        #expect(fields.customProperties == .unchanged)
        #expect(fields.platformProperties.isEmpty)
    }

    @Test func readsFieldsAtTopLevel() throws {
        let fields = try register(#"{"provider": "fcm", "token": "abc", "user_alias": "bob", "name": "Pixel"}"#)
        #expect(fields.provider == .fcm)
        #expect(fields.token == "abc")
        #expect(fields.userAlias == .set("bob"))
        #expect(fields.name == .set("Pixel"))
        #expect(fields.language == .unchanged)
        #expect(fields.country == .unchanged)
    }

    @Test func gcmMeansFCM() throws {
        #expect(try register(enveloped(provider: "gcm")).provider == .fcm)
        #expect(try register(enveloped(provider: "GCM")).provider == .fcm)
    }

    @Test func apnsTokenIsLowerCased() throws {
        let fields = try register(enveloped(provider: "apns", token: hex64.uppercased()))
        #expect(fields.token == hex64)
    }

    @Test func missingProvider() throws {
        let error = try registrationError(#"{"device_token": {"token": "abc"}}"#)
        #expect(error?.code == "missing_field")
        #expect(error?.field == "device_token.provider")
    }

    @Test func emptyProviderIsMissing() throws {
        let error = try registrationError(#"{"provider": "", "token": "abc"}"#)
        #expect(error?.code == "missing_field")
        #expect(error?.field == "provider")
    }

    @Test func missingToken() throws {
        let error = try registrationError(#"{"device_token": {"provider": "fcm"}}"#)
        #expect(error?.code == "missing_field")
        #expect(error?.field == "device_token.token")
    }

    @Test func unknownProvider() throws {
        let error = try registrationError(enveloped(provider: "wns"))
        #expect(error?.code == "invalid_provider")
        #expect(error?.field == "device_token.provider")
    }

    @Test func nonHexAPNsToken() throws {
        let error = try registrationError(enveloped(provider: "apns", token: String(repeating: "z", count: 64)))
        #expect(error?.code == "invalid_token")
        #expect(error?.field == "device_token.token")
    }

    @Test(arguments: [63, 201])
    func apnsTokenLengthRejected(_ length: Int) throws {
        let error = try registrationError(enveloped(provider: "apns", token: String(repeating: "a", count: length)))
        #expect(error?.code == "invalid_token")
        #expect(error?.field == "device_token.token")
    }

    @Test(arguments: [64, 200])
    func apnsTokenLengthAccepted(_ length: Int) throws {
        let token = String(repeating: "a", count: length)
        #expect(try register(enveloped(provider: "apns", token: token)).token == token)
    }

    @Test func fcmTokenWithSpaceRejected() throws {
        let error = try registrationError(enveloped(token: "abc def"))
        #expect(error?.code == "invalid_token")
        #expect(error?.field == "device_token.token")
    }

    @Test func fcmTokenTooLongRejected() throws {
        let error = try registrationError(enveloped(token: String(repeating: "x", count: 4097)))
        #expect(error?.code == "invalid_token")
        let token = String(repeating: "x", count: 4096)
        #expect(try register(enveloped(token: token)).token == token)
    }

    @Test func tokenAsNumberIsInvalidType() throws {
        let error = try registrationError(#"{"device_token": {"provider": "fcm", "token": 12345}}"#)
        #expect(error?.code == "invalid_type")
        #expect(error?.field == "device_token.token")
    }

    @Test func providerAsNumberIsInvalidType() throws {
        let error = try registrationError(#"{"provider": 1, "token": "abc"}"#)
        #expect(error?.code == "invalid_type")
        #expect(error?.field == "provider")
    }

    @Test func missingUserAliasAnonymises() throws {
        #expect(try register(enveloped()).userAlias == .set(nil))
    }

    @Test func nullOrEmptyUserAliasAnonymises() throws {
        #expect(try register(enveloped(#""user_alias": null"#)).userAlias == .set(nil))
        #expect(try register(enveloped(#""user_alias": """#)).userAlias == .set(nil))
    }

    @Test func nestedUserAlias() throws {
        #expect(try register(enveloped(#""user": {"alias": "carol"}"#)).userAlias == .set("carol"))
    }

    @Test func userAliasLengthLimit() throws {
        let ok = String(repeating: "u", count: 255)
        #expect(try register(enveloped(#""user_alias": "\#(ok)""#)).userAlias == .set(ok))
        let error = try registrationError(enveloped(#""user_alias": "\#(ok)u""#))
        #expect(error?.code == "too_long")
        #expect(error?.field == "device_token.user_alias")
    }

    @Test func nameLengthLimit() throws {
        let error = try registrationError(enveloped(#""name": "\#(String(repeating: "n", count: 256))""#))
        #expect(error?.code == "too_long")
        #expect(error?.field == "device_token.name")
    }

    @Test func languageIsLowerCased() throws {
        #expect(try register(enveloped(#""language": "EN""#)).language == .set("en"))
        #expect(try register(enveloped(#""language": "deu""#)).language == .set("deu"))
    }

    @Test(arguments: ["english", "e", "e1", "en-GB"])
    func invalidLanguage(_ language: String) throws {
        let error = try registrationError(enveloped(#""language": "\#(language)""#))
        #expect(error?.code == "invalid_language")
        #expect(error?.field == "device_token.language")
    }

    @Test func countryIsLowerCased() throws {
        #expect(try register(enveloped(#""country": "GB""#)).country == .set("gb"))
    }

    @Test(arguments: ["GBR", "G", "G1"])
    func invalidCountry(_ country: String) throws {
        let error = try registrationError(enveloped(#""country": "\#(country)""#))
        #expect(error?.code == "invalid_country")
        #expect(error?.field == "device_token.country")
    }

    @Test func customPropertiesAsObject() throws {
        let fields = try register(enveloped(#""custom_properties": {"onsite": true, "level": 3}"#))
        #expect(fields.customProperties == .set(["onsite": .bool(true), "level": .integer(3)]))
    }

    @Test func customPropertiesAsStringHoldingObject() throws {
        let fields = try register(enveloped(#""custom_properties": "{\"onsite\":true}""#))
        #expect(fields.customProperties == .set(["onsite": .bool(true)]))
    }

    @Test func customPropertiesNullOrEmptyStringClears() throws {
        #expect(try register(enveloped(#""custom_properties": null"#)).customProperties == .set([:]))
        #expect(try register(enveloped(#""custom_properties": """#)).customProperties == .set([:]))
    }

    @Test(arguments: [
        #""custom_properties": [1, 2]"#,
        #""custom_properties": "[1, 2]""#,
        #""custom_properties": "{not json""#,
        #""custom_properties": 42"#,
    ])
    func invalidCustomProperties(_ member: String) throws {
        let error = try registrationError(enveloped(member))
        #expect(error?.code == "invalid_custom_properties")
        #expect(error?.field == "device_token.custom_properties")
    }

    @Test func customPropertiesTooLarge() throws {
        let big = String(repeating: "x", count: 16 * 1024)
        let error = try registrationError(enveloped(#""custom_properties": {"blob": "\#(big)"}"#))
        #expect(error?.code == "too_large")
        #expect(error?.field == "device_token.custom_properties")
    }

    @Test func customPropertiesAtSizeLimitAccepted() throws {
        // {"b":"…"} is 8 bytes of JSON around the value.
        let value = String(repeating: "x", count: 16 * 1024 - 8)
        let fields = try register(enveloped(#""custom_properties": {"b": "\#(value)"}"#))
        #expect(fields.customProperties == .set(["b": .string(value)]))
    }

    @Test func unknownKeysArePlatformProperties() throws {
        let fields = try register(enveloped(#""app_version": "1.2", "os": {"name": "iOS"}, "name": "x""#))
        #expect(fields.platformProperties == ["app_version": .string("1.2"), "os": .object(["name": .string("iOS")])])
    }

    @Test func knownKeysAreNotPlatformProperties() throws {
        let fields = try register(
            enveloped(#""id": 5, "device_token_id": 5, "user": {"alias": "a"}, "language": "en", "country": "gb", "custom_properties": {}"#)
        )
        #expect(fields.platformProperties.isEmpty)
    }

    @Test func bodyThatIsAnArray() throws {
        let error = try registrationError(#"[{"provider": "fcm", "token": "abc"}]"#)
        #expect(error?.code == "invalid_body")
    }

    @Test func deviceTokenThatIsAString() throws {
        let error = try registrationError(#"{"device_token": "abc"}"#)
        #expect(error?.code == "invalid_type")
        #expect(error?.field == "device_token")
    }
}

@Suite struct DeviceFieldsUpdateTests {
    @Test func onlySentFieldsChange() throws {
        let fields = try DeviceFields.update(from: json(#"{"device_token": {"name": "New name"}}"#), provider: .fcm)
        #expect(fields.name == .set("New name"))
        #expect(fields.token == nil)
        #expect(fields.provider == nil)
        #expect(fields.userAlias == .unchanged)
        #expect(fields.language == .unchanged)
        #expect(fields.country == .unchanged)
        #expect(fields.customProperties == .unchanged)
        #expect(fields.platformProperties.isEmpty)
    }

    @Test func emptyBodyChangesNothing() throws {
        #expect(try DeviceFields.update(from: json("{}"), provider: .apns) == DeviceFields())
    }

    @Test func emptyUserAliasClears() throws {
        let fields = try DeviceFields.update(from: json(#"{"user_alias": ""}"#), provider: .fcm)
        #expect(fields.userAlias == .set(nil))
    }

    @Test func sameProviderIsAccepted() throws {
        let fields = try DeviceFields.update(from: json(#"{"provider": "apns", "language": "FR"}"#), provider: .apns)
        #expect(fields.language == .set("fr"))
        let gcm = try DeviceFields.update(from: json(#"{"provider": "gcm"}"#), provider: .fcm)
        #expect(gcm == DeviceFields())
    }

    @Test func differentProviderIsRejected() throws {
        let error = try updateError(#"{"device_token": {"provider": "fcm"}}"#, provider: .apns)
        #expect(error?.code == "provider_immutable")
        #expect(error?.field == "device_token.provider")
    }

    @Test func unknownProviderOnUpdateIsCalledUnknown() throws {
        let error = try updateError(#"{"provider": "wns"}"#, provider: .apns)
        #expect(error?.code == "invalid_provider")
        #expect(error?.field == "provider")
    }

    @Test func tokenIsValidatedAgainstGivenProvider() throws {
        // A valid FCM token is not a valid APNs token.
        let error = try updateError(#"{"token": "not-hex"}"#, provider: .apns)
        #expect(error?.code == "invalid_token")
        #expect(error?.field == "token")

        let apns = try DeviceFields.update(from: json(#"{"token": "\#(hex64.uppercased())"}"#), provider: .apns)
        #expect(apns.token == hex64)

        let fcm = try DeviceFields.update(from: json(#"{"token": "not-hex"}"#), provider: .fcm)
        #expect(fcm.token == "not-hex")
    }

    @Test func updateKeepsUnknownKeys() throws {
        let fields = try DeviceFields.update(from: json(#"{"app_version": "2.0"}"#), provider: .fcm)
        #expect(fields.platformProperties == ["app_version": .string("2.0")])
    }
}
