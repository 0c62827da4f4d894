import Foundation
import NotifiableCore
import Testing

@Suite struct JSONTextTests {
    @Test(arguments: ["plain", "", "quote \" and \\ backslash", "line\nbreak\r\ttab", "\u{01}\u{08}\u{0C}\u{1F}\u{7F}",
                      "separators \u{2028}\u{2029}", "émoji 👩‍👩‍👧 and 中文", "https://example.com/a/b"])
    func aQuotedStringReadsBackAsItself(_ text: String) throws {
        let quoted = JSONText.quoted(text)
        #expect(try JSONDecoder().decode(String.self, from: Data(quoted.utf8)) == text)
        #expect(!quoted.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0.value == 0x2028 || $0.value == 0x2029 },
                "every control character and line separator is escaped: \(quoted)")
    }

    @Test func slashesAreLeftAlone() {
        #expect(JSONText.quoted("a/b") == #""a/b""#)
        #expect(JSONText.quoted("\u{1}") == #""\u0001""#)
    }
}
