/// Checks that bytes are one JSON object (RFC 8259, UTF-8), without building it: the fake gateway answers
/// `BadPayload` otherwise, on every request, so this stays cheaper than a full parse.
enum JSONObjectValidator {
    static let maxDepth = 512

    static func isJSONObject(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { isJSONObject($0) }
    }

    static func isJSONObject(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        var parser = Parser(bytes: buffer)
        parser.skipWhitespace()
        guard parser.peek() == UInt8(ascii: "{"), parser.value(depth: 0) else { return false }
        parser.skipWhitespace()
        return parser.index == buffer.count
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        func peek() -> UInt8? {
            index < bytes.count ? bytes[index] : nil
        }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            guard peek() == byte else { return false }
            index += 1
            return true
        }

        mutating func value(depth: Int) -> Bool {
            guard depth < JSONObjectValidator.maxDepth, let byte = peek() else { return false }
            switch byte {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
            default: return false
            }
        }

        mutating func object(depth: Int) -> Bool {
            index += 1  // {
            skipWhitespace()
            if consume(UInt8(ascii: "}")) { return true }
            while true {
                guard peek() == UInt8(ascii: "\""), string() else { return false }
                skipWhitespace()
                guard consume(UInt8(ascii: ":")) else { return false }
                skipWhitespace()
                guard value(depth: depth + 1) else { return false }
                skipWhitespace()
                if consume(UInt8(ascii: "}")) { return true }
                guard consume(UInt8(ascii: ",")) else { return false }
                skipWhitespace()
            }
        }

        mutating func array(depth: Int) -> Bool {
            index += 1  // [
            skipWhitespace()
            if consume(UInt8(ascii: "]")) { return true }
            while true {
                guard value(depth: depth + 1) else { return false }
                skipWhitespace()
                if consume(UInt8(ascii: "]")) { return true }
                guard consume(UInt8(ascii: ",")) else { return false }
                skipWhitespace()
            }
        }

        mutating func literal(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return false }
            index += count
            return true
        }

        mutating func digits() -> Bool {
            let start = index
            while let byte = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
            return index > start
        }

        mutating func number() -> Bool {
            _ = consume(UInt8(ascii: "-"))
            if consume(UInt8(ascii: "0")) {
                // No leading zeros.
            } else if !digits() {
                return false
            }
            if consume(UInt8(ascii: ".")), !digits() { return false }
            if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
                if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
                guard digits() else { return false }
            }
            return true
        }

        /// A string, with its escapes and its UTF-8 checked.
        mutating func string() -> Bool {
            index += 1  // "
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return true
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escaped = peek() else { return false }
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                        UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        continue
                    case UInt8(ascii: "u"):
                        guard bytes.count - index >= 4 else { return false }
                        for _ in 0..<4 {
                            guard Self.isHexDigit(bytes[index]) else { return false }
                            index += 1
                        }
                    default:
                        return false
                    }
                case 0x00..<0x20:
                    return false
                case 0x20..<0x80:
                    index += 1
                default:
                    guard utf8Scalar() else { return false }
                }
            }
            return false
        }

        /// One multi-byte UTF-8 scalar starting at `index` (well-formed, shortest form, no surrogates).
        mutating func utf8Scalar() -> Bool {
            let lead = bytes[index]
            let count: Int
            var lower: UInt8 = 0x80
            var upper: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: count = 1
            case 0xE0:
                count = 2
                lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: count = 2
            case 0xED:
                count = 2
                upper = 0x9F
            case 0xF0:
                count = 3
                lower = 0x90
            case 0xF1...0xF3: count = 3
            case 0xF4:
                count = 3
                upper = 0x8F
            default: return false
            }
            guard bytes.count - index > count else { return false }
            for offset in 1...count {
                let byte = bytes[index + offset]
                if offset == 1 {
                    guard (lower...upper).contains(byte) else { return false }
                } else {
                    guard (0x80...0xBF).contains(byte) else { return false }
                }
            }
            index += count + 1
            return true
        }

        static func isHexDigit(_ byte: UInt8) -> Bool {
            (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
        }
    }
}
