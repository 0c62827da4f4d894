import Foundation
import Testing

@testable import NotifiableSandbox

@Suite("JSON object check")
struct JSONObjectValidatorTests {
    static let valid = [
        #"{}"#, #" { } "#, alertPayload, #"{"a":[1,-2.5,3e10,0.0E-3,true,false,null,{"b":"c"}],"d":{}}"#,
        #"{"escapes":"\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00"}"#, "{\"utf8\":\"é ✓ 😀\"}", "\n{\"a\":1}\r\n",
        #"{"a":"b","a":"c"}"#, #"{"deep":[[[[[[[[[[{}]]]]]]]]]]}"#,
    ]
    static let invalid = [
        "", " ", "[]", "[{}]", "1", #""{}""#, "null", "{", "}", #"{"a"}"#, #"{"a":}"#, #"{"a":1,}"#, #"{,}"#,
        #"{a:1}"#, #"{'a':1}"#, #"{"a":01}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":-}"#, #"{"a":1e}"#, #"{"a":+1}"#,
        #"{"a":tru}"#, #"{"a":True}"#, #"{"a":"\x"}"#, #"{"a":"\u12"}"#, #"{"a":"unterminated}"#, "{\"a\":\"\t\"}",
        #"{} {}"#, #"{}x"#, #"{"a":[1,2}"#, #"{"a":[1 2]}"#, #"{"a" 1}"#, "{\"a\":NaN}",
    ]

    @Test("Accepts JSON objects")
    func acceptsObjects() {
        for text in Self.valid {
            #expect(JSONObjectValidator.isJSONObject(Array(text.utf8)), "\(text)")
        }
    }

    @Test("Refuses anything else")
    func refusesOthers() {
        for text in Self.invalid {
            #expect(!JSONObjectValidator.isJSONObject(Array(text.utf8)), "\(text)")
        }
        #expect(!JSONObjectValidator.isJSONObject([0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D]))  // cut UTF-8
        #expect(!JSONObjectValidator.isJSONObject([0x7B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x3A, 0x31, 0x7D]))  // surrogate
        #expect(!JSONObjectValidator.isJSONObject([0x7B, 0x22, 0xC0, 0xAF, 0x22, 0x3A, 0x31, 0x7D]))  // overlong
        let tooDeep = #"{"a":"# + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}"
        #expect(!JSONObjectValidator.isJSONObject(Array(tooDeep.utf8)))
    }

    @Test("Agrees with JSONSerialization on mutated payloads")
    func agreesWithFoundation() {
        let alphabet = Array(#"{}[]":,-.019atn "#.utf8)
        var generator = SplitMix64(seed: 2024)
        let seeds = Self.valid.filter { !$0.contains("\\") }.map { Array($0.utf8) }
        for round in 0..<3000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0...(generator.next() % 3) where !bytes.isEmpty {
                let position = Int(generator.next() % UInt64(bytes.count))
                let replacement = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                switch generator.next() % 3 {
                case 0: bytes[position] = replacement
                case 1: bytes.insert(replacement, at: position)
                default: bytes.remove(at: position)
                }
            }
            // Foundation's parser allows a trailing comma ({"a":1,}); RFC 8259, and this check, do not.
            if Self.hasTrailingComma(bytes) {
                #expect(!JSONObjectValidator.isJSONObject(bytes))
                continue
            }
            let foundation = (try? JSONSerialization.jsonObject(with: Data(bytes))) is [String: Any]
            #expect(
                JSONObjectValidator.isJSONObject(bytes) == foundation,
                "\(String(decoding: bytes, as: UTF8.self))"
            )
        }
    }

    static func hasTrailingComma(_ bytes: [UInt8]) -> Bool {
        var lastSignificant: UInt8?
        var inString = false
        for byte in bytes {
            if inString {
                if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: " "), 0x09, 0x0A, 0x0D:
                continue
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if lastSignificant == UInt8(ascii: ",") { return true }
            case UInt8(ascii: "\""):
                inString = true
            default:
                break
            }
            lastSignificant = byte
        }
        return false
    }
}
