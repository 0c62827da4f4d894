import Foundation
import NotifiableCore
import Testing

/// The pure rules behind a person's data, replay refusal and admin keys.
@Suite struct PersonalDataRulesTests {
    @Test(
        arguments: [
            ("alice", nil), ("alice@example.com", nil), (String(repeating: "é", count: 255), nil), ("名前", nil),
            ("", "is empty"), (String(repeating: "a", count: 256), "is 256 characters; at most 255 are allowed"),
            ("a\tb", "contains a control character"), ("a\u{0}b", "contains a control character"), ("a\u{7F}", "contains a control character"),
        ] as [(String, String?)])
    func whatAUserAliasMayBe(alias: String, problem: String?) {
        #expect(UserAlias.problem(alias) == problem)
    }

    @Test func anErasedAliasDigestIsKeyedByMasterKeyAndApp() {
        let key = MasterKey.generate(), other = MasterKey.generate()
        let digest = key.erasedAliasDigest(alias: "alice", appID: 3)
        #expect(digest.count == 64 && digest.allSatisfy(\.isHexDigit))
        #expect(digest == key.erasedAliasDigest(alias: "alice", appID: 3))
        #expect(digest != key.erasedAliasDigest(alias: "alice", appID: 4))
        #expect(digest != key.erasedAliasDigest(alias: "alicf", appID: 3))
        #expect(digest != other.erasedAliasDigest(alias: "alice", appID: 3))
        // Found after a rotation: the previous key's digest is among the ring's.
        #expect(MasterKeyring(current: other, previous: [key]).erasedAliasDigests(alias: "alice", appID: 3).contains(digest))
        // "1" in app 23 and "31" in app 2 are different people.
        #expect(key.erasedAliasDigest(alias: "31", appID: 2) != key.erasedAliasDigest(alias: "1", appID: 23))
    }

    @Test func aRequestDigestIsItsCredentialAndSignatureAlone() {
        let digest = SignedRequestDigest.of(accessID: "id", algorithm: .hmacSHA1, signature: "sig")
        #expect(digest.count == 16)
        #expect(digest == SignedRequestDigest.of(accessID: "id", algorithm: .hmacSHA1, signature: "sig"))
        #expect(digest != SignedRequestDigest.of(accessID: "id", algorithm: .hmacSHA256, signature: "sig"))
        #expect(digest != SignedRequestDigest.of(accessID: "id2", algorithm: .hmacSHA1, signature: "sig"))
        #expect(
            SignedRequestDigest.of(accessID: "ab", algorithm: .hmacSHA1, signature: "c")
                != SignedRequestDigest.of(accessID: "a", algorithm: .hmacSHA1, signature: "bc"))
        #expect(SignedRequestDigest.isChecked(method: "POST", role: .server) && SignedRequestDigest.isChecked(method: "DELETE", role: .server))
        #expect(!SignedRequestDigest.isChecked(method: "GET", role: .server) && !SignedRequestDigest.isChecked(method: "POST", role: .device))
    }

    @Test func anOperatorKeyHasItsShapeAndALabelItsLimits() {
        let key = OperatorKey.generate()
        #expect(OperatorKey.isWellFormed(key) && key.hasPrefix("nk_") && key.count == 46)
        #expect(key != OperatorKey.generate())
        #expect(!OperatorKey.isWellFormed("nk_short") && !OperatorKey.isWellFormed(String(key.dropFirst(3))))
        #expect(!OperatorKey.isWellFormed("nk_" + String(repeating: "+", count: 43)))
        #expect(OperatorKey.digest(key).count == 32)
        #expect(OperatorKey.labelProblem("deploys") == nil)
        #expect(OperatorKey.labelProblem("") != nil && OperatorKey.labelProblem(String(repeating: "e\u{301}", count: 33)) != nil)
        #expect(OperatorKey.labelProblem("a\nb") != nil)
    }
}
