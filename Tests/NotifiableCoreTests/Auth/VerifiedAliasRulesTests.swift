import Foundation
import NotifiableCore
import Testing

/// Which user a device change must prove it acts for, and where its token may be sent.
@Suite struct VerifiedAliasRulesTests {
    static func device(alias: String?, token: String = hex64) -> Device {
        Device(
            id: 1, appID: 1, provider: .apns, token: token, name: nil, userAlias: alias, language: nil, country: nil,
            customProperties: [:], platformProperties: [:], createdAt: Date(), updatedAt: Date(), registeredAt: Date(),
            invalidatedAt: nil, unregisteredAt: nil
        )
    }

    static func update(_ text: String, of current: Device) throws -> String? {
        try DeviceFields.update(from: json(text), provider: .apns).userAliasToProve(current: current)
    }

    @Test func aRegistrationProvesTheAliasItNames() throws {
        func alias(_ text: String) throws -> String? { try DeviceFields.registration(from: json(text)).userAliasToProve(current: nil) }
        #expect(try alias(#"{"provider": "apns", "token": "\#(hex64)", "user_alias": "alice"}"#) == "alice")
        #expect(try alias(#"{"device_token": {"provider": "apns", "token": "\#(hex64)", "user": {"alias": "alice"}}}"#) == "alice")
        #expect(try alias(#"{"provider": "apns", "token": "\#(hex64)"}"#) == nil)
        #expect(try alias(#"{"provider": "apns", "token": "\#(hex64)", "user_alias": ""}"#) == nil)
        #expect(try alias(#"{"provider": "apns", "token": "\#(hex64)", "user_alias": null}"#) == nil)
    }

    @Test func anUpdateProvesANewOwnerOrANewPushTokenUnderItsOwner() throws {
        let alices = Self.device(alias: "alice"), anonymous = Self.device(alias: nil)
        let other = String(repeating: "b2", count: 32)
        #expect(try Self.update(#"{"user_alias": "bob"}"#, of: alices) == "bob")
        #expect(try Self.update(#"{"user_alias": "bob"}"#, of: anonymous) == "bob")
        #expect(try Self.update(#"{"token": "\#(other)"}"#, of: alices) == "alice")
        #expect(try Self.update(#"{"token": "\#(other)", "user_alias": "alice"}"#, of: alices) == "alice")
        #expect(try Self.update(#"{"token": "\#(other)", "user_alias": "bob"}"#, of: alices) == "bob")
        // Nobody new: the same owner and push token, anonymising, or an anonymous device's new token.
        #expect(try Self.update(#"{"user_alias": "alice", "name": "Phone"}"#, of: alices) == nil)
        #expect(try Self.update(#"{"token": "\#(hex64.uppercased())"}"#, of: alices) == nil)
        #expect(try Self.update(#"{"language": "fr"}"#, of: alices) == nil)
        #expect(try Self.update(#"{"user_alias": ""}"#, of: alices) == nil)
        #expect(try Self.update(#"{"user_alias": null, "token": "\#(other)"}"#, of: alices) == nil)
        #expect(try Self.update(#"{"token": "\#(other)"}"#, of: anonymous) == nil)
    }

    @Test func theTokenIsReadFromTheEnvelopeOrTheTopLevelAndIsNoPlatformProperty() throws {
        #expect(try DeviceFields.presentedUserToken(in: json(#"{"device_token": {"user_token": "t1"}, "user_token": "t2"}"#)) == "t1")
        #expect(try DeviceFields.presentedUserToken(in: json(#"{"device_token": {"name": "x"}, "user_token": "t2"}"#)) == "t2")
        #expect(try DeviceFields.presentedUserToken(in: json(#"{"user_token": ""}"#)) == nil)
        #expect(try DeviceFields.presentedUserToken(in: json(#"{"user_token": null}"#)) == nil)
        #expect(try DeviceFields.presentedUserToken(in: json("[]")) == nil)
        let listed = try json(#"{"device_token": {"user_token": ["t"]}}"#)
        let wrong = validationError { () throws(ValidationError) in try DeviceFields.presentedUserToken(in: listed) }
        #expect(wrong?.field == "device_token.user_token")

        let fields = try DeviceFields.registration(from: json(#"{"provider": "apns", "token": "\#(hex64)", "user_token": "t", "app_version": "2"}"#))
        #expect(fields.platformProperties == ["app_version": .string("2")])
    }
}
