import Testing

@testable import NotifiableApp

@Suite struct RequestIdentifierTests {
    @Test(arguments: ["abc-123", "a", String(repeating: "x", count: 128), "with space", "~!@#$%^&*()_+{}|:<>?"])
    func printableASCIIUpTo128IsKept(header: String) {
        #expect(RequestIdentifier.sanitized(header) == header)
        #expect(RequestIdentifier.accept(header) == header)
    }

    @Test(arguments: [
        "", String(repeating: "x", count: 129), "tab\there", "line\nbreak", "nul\u{0}", "del\u{7F}", "café", "emoji🙂",
    ])
    func anythingElseIsReplaced(header: String) {
        #expect(RequestIdentifier.sanitized(header) == nil)
        let replaced = RequestIdentifier.accept(header)
        #expect(replaced != header)
        #expect(RequestIdentifier.sanitized(replaced) == replaced)
    }

    @Test func missingHeaderGetsANewID() {
        #expect(RequestIdentifier.sanitized(nil) == nil)
        let generated = RequestIdentifier.accept(nil)
        #expect(generated.count == 32)
        #expect(generated.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(RequestIdentifier.generate() != RequestIdentifier.generate())
    }
}
