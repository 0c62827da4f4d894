import Crypto
import Foundation
import NotifiableCore
import Testing

/// User tokens: HS256 JWTs that only a key derived for the app and generation verifies.
@Suite struct UserTokenTests {
    static let master = MasterKey.generate()
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let token = UserToken(appID: 7, userAlias: "alice@example.com", generation: 2, issuedAt: now, expiresAt: now + 600)
    static var key: SymmetricKey { master.userTokenKey(appID: 7, generation: 2) }

    static func malformed(_ text: String) -> Bool {
        do {
            _ = try UserToken.verify(text, keys: [key], now: now)
            return false
        } catch {
            return error == .malformed
        }
    }

    /// `text` with one of its three parts replaced.
    static func replacing(part index: Int, of text: String, with part: String) -> String {
        var parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[index] = part
        return parts.joined(separator: ".")
    }

    @Test func roundTrip() throws {
        let text = Self.token.signed(with: Self.key)
        #expect(text.split(separator: ".").count == 3)
        #expect(try UserToken.verify(text, keys: [Self.key], now: Self.now) == Self.token)
        #expect(try UserToken.unverified(text) == Self.token)
        let header = try #require(Base64URL.decode(text.split(separator: ".")[0]))
        #expect(String(decoding: header, as: UTF8.self) == #"{"alg":"HS256","kid":"2","typ":"JWT"}"#)
    }

    @Test func tamperedClaimsAreRefused() throws {
        let text = Self.token.signed(with: Self.key)
        // bob's claims under alice's signature.
        let bob = UserToken(appID: 7, userAlias: "bob", generation: 2, issuedAt: Self.now, expiresAt: Self.now + 600)
            .signed(with: SymmetricKey(size: .bits256))
        let forged = Self.replacing(part: 1, of: text, with: String(bob.split(separator: ".")[1]))
        #expect(try UserToken.unverified(forged).userAlias == "bob")
        #expect(throws: UserTokenError.badSignature) { try UserToken.verify(forged, keys: [Self.key], now: Self.now) }
    }

    @Test func tamperedSignatureIsRefused() throws {
        let text = Self.token.signed(with: Self.key)
        // Flip a bit of the signature's bytes (editing its last character could change only padding bits).
        var signature = try #require(Base64URL.decode(text.split(separator: ".")[2]))
        signature[5] ^= 0x01
        let tampered = Self.replacing(part: 2, of: text, with: Base64URL.encode(signature))
        #expect(throws: UserTokenError.badSignature) { try UserToken.verify(tampered, keys: [Self.key], now: Self.now) }
        let truncated = Self.replacing(part: 2, of: text, with: Base64URL.encode(signature.prefix(16)))
        #expect(throws: UserTokenError.badSignature) { try UserToken.verify(truncated, keys: [Self.key], now: Self.now) }
    }

    @Test func expiredIsRefused() throws {
        let text = Self.token.signed(with: Self.key)
        #expect(try UserToken.verify(text, keys: [Self.key], now: Self.now + 599).userAlias == "alice@example.com")
        #expect(throws: UserTokenError.expired(Self.now + 600)) { try UserToken.verify(text, keys: [Self.key], now: Self.now + 600) }
        #expect(throws: UserTokenError.expired(Self.now + 600)) { try UserToken.verify(text, keys: [Self.key], now: Self.now + 86400) }
        #expect(UserTokenError.expired(Self.now + 600).description.contains("POST /api/v1/users/:alias/tokens"))
    }

    @Test func anotherAppsOrGenerationsKeyIsRefused() throws {
        let otherApp = Self.token.signed(with: Self.master.userTokenKey(appID: 8, generation: 2))
        #expect(throws: UserTokenError.badSignature) { try UserToken.verify(otherApp, keys: [Self.key], now: Self.now) }
        let otherGeneration = Self.token.signed(with: Self.master.userTokenKey(appID: 7, generation: 1))
        #expect(throws: UserTokenError.badSignature) { try UserToken.verify(otherGeneration, keys: [Self.key], now: Self.now) }
        let otherMaster = Self.token.signed(with: MasterKey.generate().userTokenKey(appID: 7, generation: 2))
        #expect(throws: UserTokenError.badSignature) { try UserToken.verify(otherMaster, keys: [Self.key], now: Self.now) }
    }

    @Test func malformedInputsAreRefusedAsMalformed() throws {
        let text = Self.token.signed(with: Self.key)
        let claims = String(text.split(separator: ".")[1])
        func part(_ json: String) -> String { Base64URL.encode(Data(json.utf8)) }
        let cases = [
            "", "a.b", "a.b.c.d", "...", "!!!.@@@.###", text + ".", "ey.ey.ey",
            // alg none, unsigned.
            part(#"{"alg":"none","kid":"2","typ":"JWT"}"#) + "." + claims + ".",
            part(#"{"alg":"none","kid":"2","typ":"JWT"}"#) + "." + claims + "." + String(text.split(separator: ".")[2]),
            // Standard base64 with padding, not base64url.
            Data(#"{"alg":"HS256","kid":"2"}"#.utf8).base64EncodedString() + "." + claims + ".AA",
            part(#"{"alg":"HS256","typ":"JWT"}"#) + "." + claims + ".AA",
            part(#"{"alg":"HS256","kid":"two"}"#) + "." + claims + ".AA",
            part(#"{"alg":"HS256","kid":"2"}"#) + "." + part(#"{"app":7,"exp":1,"iat":1,"sub":""}"#) + ".AA",
            part(#"{"alg":"HS256","kid":"2"}"#) + "." + part(#"{"app":"7","exp":1,"iat":1,"sub":"a"}"#) + ".AA",
            part(#"{"alg":"HS256","kid":"2"}"#) + "." + part(#"{"app":7,"iat":1,"sub":"a"}"#) + ".AA",
            part(#"["HS256"]"#) + "." + claims + ".AA",
            String(repeating: "A", count: 4097),
        ]
        for text in cases {
            #expect(Self.malformed(text), "\(text)")
            #expect(throws: UserTokenError.malformed) { try UserToken.unverified(text) }
        }
    }

    @Test func aTokenVerifiesWithAPreviousMasterKeyInTheKeyring() throws {
        let old = MasterKey.generate(), new = MasterKey.generate()
        let text = Self.token.signed(with: old.userTokenKey(appID: 7, generation: 2))
        let rotating = MasterKeyring(current: new, previous: [old])
        #expect(try UserToken.verify(text, keys: rotating.userTokenKeys(appID: 7, generation: 2), now: Self.now) == Self.token)
        let rotated = MasterKeyring(current: new)
        #expect(throws: UserTokenError.badSignature) {
            try UserToken.verify(text, keys: rotated.userTokenKeys(appID: 7, generation: 2), now: Self.now)
        }
        // The current key signs first, so new tokens need no previous key.
        let fresh = Self.token.signed(with: rotating.userTokenKeys(appID: 7, generation: 2)[0])
        #expect(try UserToken.verify(fresh, keys: rotated.userTokenKeys(appID: 7, generation: 2), now: Self.now) == Self.token)
    }
}
