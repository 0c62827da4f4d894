import Crypto
import Foundation
import NotifiableCore
import NotifiableTesting
import Testing
import _CryptoExtras

@testable import NotifiableDelivery

@Suite struct FCMAssertionTests {
    let now = Date(timeIntervalSince1970: 1_700_000_123.9)

    func parts(_ jwt: String) throws -> (header: String, claims: [String: JSONValue], signature: Data, input: String) {
        let pieces = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(pieces.count == 3)
        let header = String(decoding: try #require(decodeBase64URL(pieces[0])), as: UTF8.self)
        let claimsJSON = try #require(decodeBase64URL(pieces[1]))
        let claims = try #require(try JSONValue.decode(claimsJSON).objectValue)
        return (header, claims, try #require(decodeBase64URL(pieces[2])), pieces[0] + "." + pieces[1])
    }

    @Test func headerAndClaimsAreWhatGoogleAsksFor() throws {
        let account = FCMTestAccount.account(tokenURI: "https://oauth2.googleapis.com/token")
        let jwt = try FCMAssertion.make(account: account, now: now)
        #expect(!jwt.contains("=") && !jwt.contains("+") && !jwt.contains("/"))
        let (header, claims, _, _) = try parts(jwt)
        #expect(header == #"{"alg":"RS256","typ":"JWT","kid":"\#(FCMTestAccount.keyID)"}"#)
        #expect(
            claims == [
                "iss": .string(FCMTestAccount.clientEmail),
                "scope": .string("https://www.googleapis.com/auth/firebase.messaging"),
                "aud": .string("https://oauth2.googleapis.com/token"),
                "iat": .integer(1_700_000_123),
                "exp": .integer(1_700_003_723),
            ])
    }

    @Test func withoutAKeyIDThereIsNoKid() throws {
        let jwt = try FCMAssertion.make(account: FCMTestAccount.account(keyID: nil), now: now)
        #expect(try parts(jwt).header == #"{"alg":"RS256","typ":"JWT"}"#)
    }

    @Test func theSignatureIsRS256WithTheAccountsKey() throws {
        let jwt = try FCMAssertion.make(account: FCMTestAccount.account(), now: now)
        let (_, _, signature, input) = try parts(jwt)
        #expect(signature.count == 256)
        let rsa = _RSA.Signing.RSASignature(rawRepresentation: signature)
        let publicKey = FCMTestAccount.key.publicKey
        #expect(publicKey.isValidSignature(rsa, for: Data(input.utf8), padding: .insecurePKCS1v1_5))
        // Not PSS, not over other claims, not by another key.
        #expect(!publicKey.isValidSignature(rsa, for: Data(input.utf8), padding: .PSS))
        #expect(!publicKey.isValidSignature(rsa, for: Data((input + "x").utf8), padding: .insecurePKCS1v1_5))
        let other = try _RSA.Signing.PrivateKey(keySize: .bits2048).publicKey
        #expect(!other.isValidSignature(rsa, for: Data(input.utf8), padding: .insecurePKCS1v1_5))
    }
}
