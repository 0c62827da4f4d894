import Foundation
import NotifiableCore
import Testing

@Suite struct JSONTextTests {
    @Test(arguments: [
        "plain", "", "quote \" and \\ backslash", "line\nbreak\r\ttab", "\u{01}\u{08}\u{0C}\u{1F}\u{7F}",
        "separators \u{2028}\u{2029}", "émoji 👩‍👩‍👧 and 中文", "https://example.com/a/b", "5 € then \u{2028}",
        "€ alone", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    ])
    func aQuotedStringReadsBackAsItself(_ text: String) throws {
        let quoted = JSONText.quoted(text)
        #expect(try JSONDecoder().decode(String.self, from: Data(quoted.utf8)) == text)
        #expect(
            !quoted.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0.value == 0x2028 || $0.value == 0x2029 },
            "every control character and line separator is escaped: \(quoted)")
    }

    @Test func slashesAreLeftAlone() {
        #expect(JSONText.quoted("a/b") == #""a/b""#)
        #expect(JSONText.quoted("\u{1}") == #""\u0001""#)
    }
}

/// `jsonText()` writes what `JSONEncoder` (sorted keys, slashes unescaped) wrote before it, except
/// that it escapes DEL and the line separators and spells every control character `\uXXXX`.
@Suite struct JSONValueTextTests {
    static func encoded(_ value: JSONValue) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static let values: [JSONValue] = [
        .null, .bool(true), .bool(false), .integer(0), .integer(-42), .integer(Int64.max), .integer(Int64.min),
        .number(1.5), .number(-0.25), .number(1e20), .number(3.0), .number(0.1),
        .string("https://example.com/a?b=c"), .string("quote \" back \\ slash"), .string("emoji 👩‍👩‍👧 中文"),
        .array([]), .object([:]),
        .object([
            "b": .integer(1), "a": .array([.null, .bool(true), .string("x")]), "n_id": .integer(7),
            "A": .string("upper"), "a10": .integer(10), "a9": .integer(9), "_": .null, "é": .string("accent"), "aa": .object(["z": .number(2.5)]),
        ]),
        .object([
            "aps": .object(["alert": .object(["title": .string("Hi"), "body": .string("There")]), "content-available": .integer(1)]),
            "url": .string("https://example.com/x"), "deep": .object(["b": .bool(true), "a": .integer(1)]),
        ]),
    ]

    @Test(arguments: values)
    func theTextIsWhatTheEncoderWrote(_ value: JSONValue) throws {
        #expect(value.jsonText() == (try Self.encoded(value)))
    }

    @Test func controlCharactersReadBackTheSame() throws {
        let value = JSONValue.object(["k\u{1}": .string("a\u{8}b\u{7F}c\u{2028}")])
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(value.jsonText().utf8)) == value)
    }
}
