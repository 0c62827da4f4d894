import Crypto
import Foundation
import NotifiableCore
import Testing

/// A browser's registration and update under the Web Push rules.
struct WebPushSubscriptionTests {
    static let point = Base64URL.encode(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)

    static func body(_ text: String) throws -> JSONValue { try JSONValue.decode(Array(text.utf8)) }

    @Test func aNewEndpointComesWithItsKeys() throws {
        let moved = try Self.body(#"{"token": "https://fcm.googleapis.com/fcm/send/renewed"}"#)
        #expect(throws: ValidationError.self) { try DeviceFields.update(from: moved, provider: .webpush) }
        do {
            _ = try DeviceFields.update(from: moved, provider: .webpush)
        } catch {
            #expect(error.field == "keys")
        }
        let withKeys = try Self.body(
            #"{"token": "https://fcm.googleapis.com/fcm/send/renewed", "keys": {"p256dh": "\#(Self.point)", "auth": "AAECAwQFBgcICQoLDA0ODw"}}"#)
        let fields = try DeviceFields.update(from: withKeys, provider: .webpush)
        #expect(fields.pushKeys?.p256dh == Self.point)
        // An update that keeps the endpoint needs no keys.
        #expect(throws: Never.self) { try DeviceFields.update(from: try Self.body(#"{"name": "Laptop"}"#), provider: .webpush) }
    }

    @Test func keysArePaddedOrNotAndNormalised() throws {
        let padded = try WebPushKeys.read(.object(["p256dh": .string(Self.point + "="), "auth": .string("AAECAwQFBgcICQoLDA0ODw==")]), path: "keys")
        #expect(padded.p256dh == Self.point)
        #expect(padded.auth == "AAECAwQFBgcICQoLDA0ODw")
    }
}
