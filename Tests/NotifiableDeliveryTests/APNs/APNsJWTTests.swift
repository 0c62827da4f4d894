import Crypto
import Foundation
import NotifiableCore
import NotifiableTesting
import Testing

@testable import NotifiableDelivery

@Suite struct APNsJWTTests {
    let key = P256.Signing.PrivateKey()
    let issuedAt = Date(timeIntervalSince1970: 1_700_000_123.9)

    func parts(_ token: String) throws -> (header: [String: JSONValue], claims: [String: JSONValue], signature: Data, input: String) {
        let pieces = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(pieces.count == 3)
        let header = try #require(decodeBase64URL(pieces[0]))
        let claims = try #require(decodeBase64URL(pieces[1]))
        let signature = try #require(decodeBase64URL(pieces[2]))
        return (
            try #require(try JSONValue.decode(header).objectValue), try #require(try JSONValue.decode(claims).objectValue),
            signature, pieces[0] + "." + pieces[1]
        )
    }

    @Test func headerClaimsAndSignature() throws {
        let token = APNsJWT.make(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: issuedAt, privateKey: key)
        #expect(!token.contains("="))
        #expect(!token.contains("+"))
        #expect(!token.contains("/"))
        let (header, claims, signature, input) = try parts(token)
        #expect(header == ["alg": .string("ES256"), "kid": .string("ABC123DEFG")])
        #expect(claims == ["iss": .string("DEF123GHIJ"), "iat": .integer(1_700_000_123)])
        #expect(signature.count == 64)
        let ecdsa = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        #expect(key.publicKey.isValidSignature(ecdsa, for: Data(input.utf8)))
        // Not valid for another key, nor for altered claims.
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(ecdsa, for: Data(input.utf8)))
        #expect(!key.publicKey.isValidSignature(ecdsa, for: Data((input + "x").utf8)))
    }

    @Test func exactHeaderText() throws {
        let token = APNsJWT.make(keyID: "KID", teamID: "TEAM", issuedAt: Date(timeIntervalSince1970: 1000), privateKey: key)
        let pieces = token.split(separator: ".").map(String.init)
        #expect(String(decoding: decodeBase64URL(pieces[0])!, as: UTF8.self) == #"{"alg":"ES256","kid":"KID"}"#)
        #expect(String(decoding: decodeBase64URL(pieces[1])!, as: UTF8.self) == #"{"iss":"TEAM","iat":1000}"#)
    }

    @Test func escapesOddIdentifiers() throws {
        let token = APNsJWT.make(keyID: "a\"b\\c\n", teamID: "t", issuedAt: issuedAt, privateKey: key)
        let (header, _, _, _) = try parts(token)
        #expect(header["kid"] == .string("a\"b\\c\n"))
    }

    @Test func base64URLHasNoPadding() {
        #expect(APNsJWT.base64URL(Data([0xFB, 0xFF])) == "-_8")
        #expect(APNsJWT.base64URL(Data("a".utf8)) == "YQ")
        #expect(APNsJWT.base64URL(Data()) == "")
    }

    @Test func privateKeyFromP8RoundTrips() throws {
        let pem = key.pemRepresentation
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try APNsJWT.privateKey(fromP8: pem).rawRepresentation == key.rawRepresentation)
        // Surrounding whitespace and CRLF line ends, as files from Windows editors have.
        let crlf = "\n  " + pem.replacingOccurrences(of: "\n", with: "\r\n") + "\r\n\n"
        #expect(try APNsJWT.privateKey(fromP8: crlf).rawRepresentation == key.rawRepresentation)
        // The bare base64 body of the file.
        let body = key.derRepresentation.base64EncodedString()
        #expect(try APNsJWT.privateKey(fromP8: body).rawRepresentation == key.rawRepresentation)
        // A key read from a .p8 signs verifiable tokens.
        let loaded = try APNsJWT.privateKey(fromP8: pem)
        let token = APNsJWT.make(keyID: "K", teamID: "T", issuedAt: issuedAt, privateKey: loaded)
        let (_, _, signature, input) = try parts(token)
        #expect(key.publicKey.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: signature), for: Data(input.utf8)))
    }

    @Test(arguments: [
        "", "   \n", "hello", "-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----", "QUJD",
    ])
    func privateKeyFromP8RejectsGarbage(_ text: String) {
        #expect(throws: APNsKeyError.self) { try APNsJWT.privateKey(fromP8: text) }
    }

    @Test func privateKeyFromP8NamesTheWrongCurve() {
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        do {
            _ = try APNsJWT.privateKey(fromP8: p384)
            Issue.record("a P-384 key was accepted")
        } catch {
            #expect(error is APNsKeyError)
            #expect(String(describing: error).contains("P-384"))
            #expect(String(describing: error).contains("P-256"))
        }
        let p521 = P521.Signing.PrivateKey().derRepresentation.base64EncodedString()
        #expect(throws: APNsKeyError.self) { try APNsJWT.privateKey(fromP8: p521) }
    }

    @Test func errorMessagesExplainTheExpectation() {
        do {
            _ = try APNsJWT.privateKey(fromP8: "hello")
            Issue.record("garbage was accepted")
        } catch {
            #expect(String(describing: error).contains(".p8"))
        }
    }
}

@Suite struct APNsTokenCacheTests {
    let key = P256.Signing.PrivateKey()
    let start = Date(timeIntervalSince1970: 1_700_000_000)

    func iat(_ token: String) -> JSONValue? {
        let claims = token.split(separator: ".").map(String.init)[1]
        return try? JSONValue.decode(decodeBase64URL(claims)!).objectValue?["iat"]
    }

    @Test func reusesTheTokenUntilItIsOld() async {
        let clock = APNsTestClock(start)
        let cache = APNsTokenCache(keyID: "K", teamID: "T", privateKey: key, now: { clock.now })
        #expect(await cache.issuedAt == nil)
        let first = await cache.token()
        #expect(iat(first) == .integer(1_700_000_000))
        #expect(await cache.issuedAt == start)
        clock.advance(by: 60)
        #expect(await cache.token() == first)
        clock.advance(by: 50 * 60 - 60 - 1)  // 49:59 after issue
        #expect(await cache.token() == first)
        clock.advance(by: 1)  // 50:00
        let second = await cache.token()
        #expect(second != first)
        #expect(iat(second) == .integer(1_700_000_000 + 50 * 60))
        #expect(await cache.issuedAt == start.addingTimeInterval(50 * 60))
        clock.advance(by: 10 * 60)
        #expect(await cache.token() == second)
    }

    @Test func customRefreshInterval() async {
        let clock = APNsTestClock(start)
        let cache = APNsTokenCache(keyID: "K", teamID: "T", privateKey: key, now: { clock.now }, refreshAfter: .seconds(20 * 60))
        let first = await cache.token()
        clock.advance(by: 20 * 60 - 1)
        #expect(await cache.token() == first)
        clock.advance(by: 2)
        #expect(await cache.token() != first)
    }

    @Test func refreshReplacesOnlyTheCurrentToken() async {
        let clock = APNsTestClock(start)
        let cache = APNsTokenCache(keyID: "K", teamID: "T", privateKey: key, now: { clock.now })
        let first = await cache.token()
        clock.advance(by: 5)
        await cache.refresh(rejected: first)
        let second = await cache.token()
        #expect(second != first)
        #expect(iat(second) == .integer(1_700_000_005))
        // Other requests that carried the first token report the same expiry: no new token.
        clock.advance(by: 5)
        await cache.refresh(rejected: first)
        await cache.refresh(rejected: first)
        #expect(await cache.token() == second)
        #expect(await cache.issuedAt == start.addingTimeInterval(5))
        // Garbage or unknown tokens change nothing.
        await cache.refresh(rejected: "not-a-token")
        #expect(await cache.token() == second)
    }

    @Test func refreshBeforeAnyTokenDoesNothing() async {
        let cache = APNsTokenCache(keyID: "K", teamID: "T", privateKey: key, now: { Date(timeIntervalSince1970: 1) })
        await cache.refresh(rejected: "x")
        #expect(await cache.issuedAt == nil)
    }

    @Test func concurrentRefreshesMakeOneToken() async {
        let clock = APNsTestClock(start)
        let cache = APNsTokenCache(keyID: "K", teamID: "T", privateKey: key, now: { clock.now })
        let first = await cache.token()
        clock.advance(by: 1)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<100 { group.addTask { await cache.refresh(rejected: first) } }
        }
        let second = await cache.token()
        #expect(second != first)
        clock.advance(by: 1)
        #expect(await cache.token() == second)
        #expect(await cache.issuedAt == start.addingTimeInterval(1))
    }

    @Test func tokensVerifyWithTheKey() async throws {
        let cache = APNsTokenCache(keyID: "K", teamID: "T", privateKey: key)
        let token = await cache.token()
        let pieces = token.split(separator: ".").map(String.init)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: decodeBase64URL(pieces[2])!)
        #expect(key.publicKey.isValidSignature(signature, for: Data((pieces[0] + "." + pieces[1]).utf8)))
        #expect(cache.keyID == "K")
        #expect(cache.teamID == "T")
    }
}
