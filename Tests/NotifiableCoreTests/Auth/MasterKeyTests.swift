import Foundation
import NotifiableCore
import Testing

@Suite struct MasterKeyTests {
    @Test func sealOpenRoundTrip() throws {
        let key = MasterKey.generate()
        let sealed = try key.seal("top secret", boundTo: "access-id-1")
        #expect(try key.open(sealed, boundTo: "access-id-1") == "top secret")
    }

    @Test func sealedFormIsNonceCiphertextTag() throws {
        let sealed = try MasterKey.generate().seal("abc", boundTo: "ctx")
        #expect(sealed.count == 12 + 3 + 16)
        #expect(!sealed.contains(subsequence: Array("abc".utf8)))
    }

    @Test func sealingTwiceGivesDifferentCiphertexts() throws {
        let key = MasterKey.generate()
        #expect(try key.seal("same", boundTo: "ctx") != key.seal("same", boundTo: "ctx"))
    }

    @Test func openWithOtherContextFails() throws {
        let key = MasterKey.generate()
        let sealed = try key.seal("top secret", boundTo: "access-id-1")
        #expect(throws: MasterKeyError.self) { try key.open(sealed, boundTo: "access-id-2") }
    }

    @Test func openWithOtherKeyFails() throws {
        let sealed = try MasterKey.generate().seal("top secret", boundTo: "ctx")
        #expect(throws: MasterKeyError.self) { try MasterKey.generate().open(sealed, boundTo: "ctx") }
    }

    @Test func openTamperedOrTruncatedFails() throws {
        let key = MasterKey.generate()
        var sealed = try key.seal("top secret", boundTo: "ctx")
        sealed[sealed.count / 2] ^= 0x01
        #expect(throws: MasterKeyError.self) { try key.open(sealed, boundTo: "ctx") }
        #expect(throws: MasterKeyError.self) { try key.open([1, 2, 3], boundTo: "ctx") }
    }

    @Test func base64RoundTrips() throws {
        let key = MasterKey.generate()
        let restored = try #require(MasterKey(base64: key.base64))
        #expect(restored.base64 == key.base64)
        let sealed = try key.seal("x", boundTo: "ctx")
        #expect(try restored.open(sealed, boundTo: "ctx") == "x")
    }

    @Test func base64IgnoresSurroundingWhitespace() {
        let text = MasterKey.generate().base64
        #expect(MasterKey(base64: "  \(text)\n") != nil)
    }

    @Test func base64Is32Bytes() throws {
        let data = try #require(Data(base64Encoded: MasterKey.generate().base64))
        #expect(data.count == 32)
    }

    @Test(arguments: [
        "not base64 at all!",
        "",
        Data(repeating: 7, count: 16).base64EncodedString(),
        Data(repeating: 7, count: 31).base64EncodedString(),
        Data(repeating: 7, count: 33).base64EncodedString(),
    ])
    func base64RejectsBadKeys(_ text: String) {
        #expect(MasterKey(base64: text) == nil)
    }
}

extension Array where Element: Equatable {
    fileprivate func contains(subsequence: [Element]) -> Bool {
        guard subsequence.count <= count else { return false }
        return (0...(count - subsequence.count)).contains { Array(self[$0..<$0 + subsequence.count]) == subsequence }
    }
}
