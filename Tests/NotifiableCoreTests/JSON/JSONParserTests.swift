import Dispatch
import Foundation
import NotifiableSandbox
import Testing

@testable import NotifiableCore

/// `JSONParser` must accept exactly what `JSONDecoder` into `JSONValue` accepted before it, and give
/// the same values: that decoder (still reachable through `JSONValue`'s `Codable`) is the oracle.
@Suite struct JSONParserTests {
    static func parsed(_ bytes: [UInt8]) -> Result<JSONValue, JSONSyntaxError> {
        Result { () throws(JSONSyntaxError) in try JSONValue.decode(bytes) }
    }

    static func oracle(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    static func agree(_ bytes: [UInt8]) -> Bool {
        switch (parsed(bytes), oracle(bytes)) {
        case (.success(let ours), let theirs?): ours == theirs
        case (.failure, nil): true
        default: false
        }
    }

    static let accepted: [(String, JSONValue)] = [
        (#" {"a" : [1, 2.5, "x", true, false, null]} "#, .object(["a": .array([.integer(1), .number(2.5), .string("x"), .bool(true), .bool(false), .null])])),
        // Whole numbers are integers however written.
        ("1.0", .integer(1)), ("1e2", .integer(100)), ("1E+2", .integer(100)), ("-0", .integer(0)), ("-0.0", .integer(0)),
        ("100e-2", .integer(1)), ("0.1e1", .integer(1)), ("123.456e3", .integer(123456)), ("-1e-400", .integer(0)),
        ("1.00000000000000000001", .integer(1)), ("9007199254740993.0", .integer(9007199254740993)),
        ("9223372036854775807", .integer(.max)), ("-9223372036854775808", .integer(.min)),
        ("9223372036854775808", .number(9223372036854775808)), ("-9223372036854775809", .number(-9223372036854775808)), ("1e19", .number(1e19)),
        // Past 2^53 with a fraction or an exponent, the old decoder's own reading (a Decimal, truncated).
        ("9007199254740993.5", .integer(9007199254740993)), ("-9007199254740993.5", .integer(-9007199254740993)),
        ("1234567890123456789.7", .integer(1234567890123456789)), ("9223372036854775807.0", .number(9223372036854775807)),
        ("-9223372036854775808.0", .number(-9223372036854775808)), ("-9.223372036854775808e18", .number(-9223372036854775808)),
        ("0.1", .number(0.1)), ("5e-1", .number(0.5)), ("2.5e-324", .number(5e-324)), ("1.7976931348623157e308", .number(.greatestFiniteMagnitude)),
        // Strings, escapes and surrogate pairs.
        (#""\"\\\/\b\f\n\r\t""#, .string("\"\\/\u{08}\u{0C}\n\r\t")), (#""\u00e9é""#, .string("éé")), (#""\ud83d\ude00""#, .string("😀")),
        (#""\uDBFF\uDFFF""#, .string("\u{10FFFF}")), (#""\u0000""#, .string("\u{0}")), (#"{"":1}"#, .object(["": .integer(1)])),
        // The old decoder's leniencies, kept: a trailing comma, and of a repeated key the first value.
        ("[1,]", .array([.integer(1)])), (#"{"a":1,}"#, .object(["a": .integer(1)])), (#"{"a":1,"a":2}"#, .object(["a": .integer(1)])),
        ("\u{FEFF}{}", .object([:])), ("\t[ ]\r\n", .array([])), ("true", .bool(true)),
    ]

    static let refused: [String] = [
        "", "   ", "tru", "True", "nul", "NaN", "+1", ".5", "01", "-01", "1.", "-", "1e", "-0e", "1.5.", "0x10", "1E400",
        "[,]", "[,1]", "{,}", "[1,,2]", #"{"a":1,,}"#, "[1 2]", #"{"a" 1}"#, #"{"a":}"#, "{1:2}", "[1],", "{}x", "1 2", "\u{0C}1", "\u{0B}1",
        #""a"#, #""\x""#, #""\U0041""#, #""\u004""#, #""\u004G""#, #""\ud800""#, #""\udfff""#, #""\ud800\u0041""#, #""\ud800x""#,
        "\"tab\there\"", "\"a\u{0}b\"", "{'a':1}",
    ]

    @Test func acceptsWhatTheOldDecoderAcceptedWithTheSameValues() throws {
        for (text, expected) in Self.accepted {
            let bytes = Array(text.utf8)
            #expect(try JSONValue.decode(bytes) == expected, "\(text.debugDescription)")
            #expect(Self.oracle(bytes) == expected, "the old decoder disagrees on \(text.debugDescription)")
        }
    }

    @Test func refusesWhatTheOldDecoderRefusedSayingWhereAndWhy() {
        for text in Self.refused {
            let bytes = Array(text.utf8)
            guard case .failure(let error) = Self.parsed(bytes) else {
                Issue.record("accepted \(text.debugDescription)")
                continue
            }
            #expect((0...bytes.count).contains(error.offset), "\(text.debugDescription): \(error)")
            #expect(Self.oracle(bytes) == nil, "the old decoder accepts \(text.debugDescription)")
        }
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0x01, 0x22], [0x22, 0xC3]] {
            #expect(throws: JSONSyntaxError.self) { try JSONValue.decode(bytes) }
            #expect(Self.oracle(bytes) == nil)
        }
        // Text in UTF-16 or UTF-32, which the old decoder converted, is refused on purpose, saying why.
        for bytes: [UInt8] in [[0x7B, 0x00, 0x7D, 0x00], [0xFF, 0xFE, 0x5B, 0x00, 0x5D, 0x00], [0xFE, 0xFF, 0x00, 0x31], [0x31, 0x00], [0x00, 0x31]] {
            #expect(Self.parsed(bytes) == .failure(JSONSyntaxError(reason: "the text is UTF-16 or UTF-32: send JSON as UTF-8", offset: 0)))
        }
        #expect(Self.parsed(Array("{}x".utf8)) == .failure(JSONSyntaxError(reason: "unexpected 'x' after the JSON value", offset: 2)))
        #expect(Self.parsed(Array(#"{"a":}"#.utf8)) == .failure(JSONSyntaxError(reason: "unexpected '}' where a value was expected", offset: 5)))
    }

    @Test func nestsAsDeepAsTheOldDecoderAndNoDeeper() {
        func nested(_ depth: Int) -> [UInt8] { Array(repeating: UInt8(ascii: "["), count: depth) + Array(repeating: UInt8(ascii: "]"), count: depth) }
        #expect(Self.agree(nested(JSONParser.maximumDepth)))
        #expect((try? JSONValue.decode(nested(JSONParser.maximumDepth))) != nil)
        #expect(Self.agree(nested(JSONParser.maximumDepth + 1)))
        #expect(throws: JSONSyntaxError.self) { try JSONValue.decode(nested(JSONParser.maximumDepth + 1)) }
        // A 64 KiB body of brackets is refused, not a stack overflow.
        #expect(throws: JSONSyntaxError.self) { try JSONValue.decode(nested(32 * 1024)) }
    }

    @Test func readsTextHeldInSeveralRegions() throws {
        var data = DispatchData.empty
        for part in [#"{"a":"#, #" [1, "x"]}"#] {
            Array(part.utf8).withUnsafeBytes { data.append($0) }
        }
        #expect(data.regions.count == 2)
        #expect(try JSONValue.decode(data) == .object(["a": .array([.integer(1), .string("x")])]))
    }

    /// Random documents, written with random spacing, escapes and number spellings, then mutated
    /// byte by byte: the parser and the old decoder agree on every one.
    @Test func agreesWithTheOldDecoderOnRandomAndMutatedDocuments() {
        var random = SplitMix64(seed: 0x4A53_4F4E)
        var disagreements: [String] = []
        for round in 0..<6_000 {
            var text: [UInt8] = []
            Self.write(Self.randomValue(&random, depth: 0), to: &text, &random)
            if round % 2 == 1 { Self.mutate(&text, &random) }
            if case .failure(let error) = Self.parsed(text), !(0...text.count).contains(error.offset) {
                disagreements.append("offset \(error.offset) outside the text: \(String(decoding: text, as: UTF8.self).debugDescription)")
            }
            if !Self.agree(text) {
                let ours = Self.parsed(text), theirs = Self.oracle(text)
                disagreements.append("\(String(decoding: text, as: UTF8.self).debugDescription): ours \(ours), old \(String(describing: theirs))")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements, first: \(disagreements.prefix(3))")
    }

    // MARK: Random documents

    static func randomValue(_ random: inout SplitMix64, depth: Int) -> JSONValue {
        switch Int.random(in: 0..<(depth < 4 ? 9 : 6), using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2:
            // Some near 2^53 and the ends of Int64, where doubles stop being exact.
            let near: [Int64] = [1 << 53, .max, .min, 1_000_000_000_000]
            let center = near.randomElement(using: &random)!
            return .integer(center.addingReportingOverflow(Int64.random(in: -3_000...3_000, using: &random)).partialValue)
        case 3: return .number(Double(Int.random(in: -99_999...99_999, using: &random)) / 1000)
        case 4, 5: return .string(randomString(&random))
        case 6: return .array((0..<Int.random(in: 0...4, using: &random)).map { _ in randomValue(&random, depth: depth + 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &random) { members[randomString(&random)] = randomValue(&random, depth: depth + 1) }
            return .object(members)
        }
    }

    static let alphabet: [Unicode.Scalar] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "é", "€", "\u{2028}", "😀", "\u{10FFFF}", "{", "]", ",",
    ]

    static func randomString(_ random: inout SplitMix64) -> String {
        String(String.UnicodeScalarView((0..<Int.random(in: 0...6, using: &random)).map { _ in alphabet.randomElement(using: &random)! }))
    }

    static func write(_ value: JSONValue, to out: inout [UInt8], _ random: inout SplitMix64) {
        func space() { if Int.random(in: 0..<4, using: &random) == 0 { out += Array([" ", "\n", "\t", "\r\n "].randomElement(using: &random)!.utf8) } }
        space()
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
        case .integer(let whole):
            let spellings = ["\(whole)", "\(whole).0", "\(whole)e0", "\(whole)0E-1", "\(whole).000e+0", "\(whole).5", "\(whole).9e0"]
            out += Array(spellings.randomElement(using: &random)!.utf8)
        case .number(let number):
            let spellings = ["\(number)", String(format: "%.6e", number), String(format: "%.3f", number)]
            out += Array(spellings.randomElement(using: &random)!.utf8)
        case .string(let text): writeString(text, to: &out, &random)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(item, to: &out, &random)
            }
            space()
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, (key, member)) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                space()
                writeString(key, to: &out, &random)
                space()
                out.append(UInt8(ascii: ":"))
                write(member, to: &out, &random)
            }
            space()
            out.append(UInt8(ascii: "}"))
        }
        space()
    }

    static func writeString(_ text: String, to out: inout [UInt8], _ random: inout SplitMix64) {
        out.append(UInt8(ascii: "\""))
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += Array(#"\""#.utf8)
            case "\\": out += Array(#"\\"#.utf8)
            case "\n": out += Array(#"\n"#.utf8)
            case "\t": out += Array(#"\t"#.utf8)
            case _ where scalar.value < 0x20 || Int.random(in: 0..<5, using: &random) == 0:
                for unit in String(scalar).utf16 {
                    let hex = String(unit, radix: 16, uppercase: Bool.random(using: &random))
                    out += Array(("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8)
                }
            default: out += Array(String(scalar).utf8)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    static func mutate(_ text: inout [UInt8], _ random: inout SplitMix64) {
        let interesting: [UInt8] = Array(#"{}[],:"\-+.eE0159 tfnu"#.utf8) + [0x00, 0x01, 0x7F, 0x80, 0xC3, 0xED, 0xFF]
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            guard !text.isEmpty else { return }
            let at = Int.random(in: 0..<text.count, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: text[at] = interesting.randomElement(using: &random)!
            case 1: text.insert(interesting.randomElement(using: &random)!, at: at)
            case 2: text.remove(at: at)
            default: text.removeLast(Int.random(in: 0...min(3, text.count), using: &random))
            }
        }
    }
}
