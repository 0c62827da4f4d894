import Foundation

/// Why a text is not JSON, and where: the byte offset from the start of the text.
public struct JSONSyntaxError: Error, Equatable, CustomStringConvertible {
    public let reason: String
    public let offset: Int

    public var description: String { "\(reason) at byte \(offset)" }
}

/// JSON text parsed straight into `JSONValue`. Every request body, imported row and stored custom
/// property goes through it; `JSONDecoder` into `JSONValue` took a tenth of the API's CPU per
/// registration, most of it building and discarding the errors of each type it tried in turn.
///
/// It accepts what that decoder accepted, with the same values (`JSONParserTests` compares the two),
/// leniencies included: a trailing comma before `]` or `}`, a leading byte order mark, and of a
/// repeated key the first value. A number is an `integer` when it is written without fraction or
/// exponent and fits in 64 bits, or when the double it makes is a whole number that does (`1.0`,
/// `1e2`); else a `number`. Nesting is limited to 512 levels. One difference, on purpose: text in
/// UTF-16 or UTF-32, which the decoder converted, is refused (RFC 8259: JSON between systems is UTF-8).
struct JSONParser: ~Copyable {
    static let maximumDepth = 512

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes)
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { parser.index = 3 }
        // UTF-8 JSON never has a NUL in its first two bytes, nor starts with a UTF-16 byte order mark.
        if bytes.count >= 2, bytes[0] == 0 || bytes[1] == 0 || (bytes[0] == 0xFE && bytes[1] == 0xFF) || (bytes[0] == 0xFF && bytes[1] == 0xFE) {
            throw JSONSyntaxError(reason: "the text is UTF-16 or UTF-32: send JSON as UTF-8", offset: 0)
        }
        let value = try parser.value()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.unexpected("after the JSON value") }
        return value
    }

    // MARK: Values

    private mutating func value() throws(JSONSyntaxError) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw failure("the text ends where a value was expected") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw unexpected("where a value was expected")
        }
    }

    private mutating func object() throws(JSONSyntaxError) -> JSONValue {
        try enterNesting()
        defer { depth -= 1 }
        var members: [String: JSONValue] = [:]
        if consume(UInt8(ascii: "}")) { return .object(members) }
        repeat {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw unexpectedOrEnd("where a key was expected") }
            let key = try string()
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { throw unexpectedOrEnd("where ':' was expected") }
            let member = try value()
            if members[key] == nil { members[key] = member }
        } while try !ended(closing: UInt8(ascii: "}"))
        return .object(members)
    }

    private mutating func array() throws(JSONSyntaxError) -> JSONValue {
        try enterNesting()
        defer { depth -= 1 }
        var items: [JSONValue] = []
        if consume(UInt8(ascii: "]")) { return .array(items) }
        repeat {
            items.append(try value())
        } while try !ended(closing: UInt8(ascii: "]"))
        return .array(items)
    }

    /// Moves past the `[` or `{` under `index` and the space after it, one level deeper.
    private mutating func enterNesting() throws(JSONSyntaxError) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw failure("arrays and objects nested more than \(Self.maximumDepth) deep") }
        index += 1
        skipWhitespace()
    }

    /// After an element of an array or object: a comma, or `closing`. True when the container ended,
    /// also at a comma just before `closing` (the decoder allowed a trailing comma).
    private mutating func ended(closing: UInt8) throws(JSONSyntaxError) -> Bool {
        skipWhitespace()
        if consume(UInt8(ascii: ",")) {
            skipWhitespace()
            return consume(closing)
        }
        if consume(closing) { return true }
        throw unexpectedOrEnd("where ',' or '\(Self.describeBare(closing))' was expected")
    }

    private mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let start = index
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count,
            UnsafeBufferPointer(start: word.utf8Start, count: count).elementsEqual(bytes[index..<index + count])
        else { throw JSONSyntaxError(reason: "unexpected \(Self.describe(bytes[start])) where a value was expected", offset: start) }
        index += count
    }

    // MARK: Strings

    /// The string starting at the opening quote under `index`; `index` ends past the closing quote.
    private mutating func string() throws(JSONSyntaxError) -> String {
        let start = index
        index += 1
        var runStart = index
        var decoded: [UInt8] = []
        var escaped = false
        while true {
            guard index < bytes.count else { throw JSONSyntaxError(reason: "a string is not closed", offset: start) }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { break }
            if byte < 0x20 { throw failure("a control character (\(Self.describe(byte))) in a string: escape it") }
            if byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            if !escaped {
                escaped = true
                decoded.reserveCapacity(index - runStart + 16)
            }
            decoded.append(contentsOf: bytes[runStart..<index])
            try escape(into: &decoded)
            runStart = index
        }
        let text: String?
        if escaped {
            decoded.append(contentsOf: bytes[runStart..<index])
            text = String(validating: decoded, as: UTF8.self)
        } else {
            text = String(validating: bytes[runStart..<index], as: UTF8.self)
        }
        guard let text else { throw JSONSyntaxError(reason: "a string that is not valid UTF-8", offset: start) }
        index += 1
        return text
    }

    /// The escape under `index` (a backslash), appended as UTF-8.
    private mutating func escape(into out: inout [UInt8]) throws(JSONSyntaxError) {
        let start = index
        guard index + 1 < bytes.count else { throw JSONSyntaxError(reason: "a string is not closed", offset: start) }
        let letter = bytes[index + 1]
        index += 2
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(letter)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hexQuad(escapeAt: start)
            if (0xDC00...0xDFFF).contains(scalar) {
                throw JSONSyntaxError(reason: "a \\u escape is the second half of a surrogate pair without the first", offset: start)
            }
            if (0xD800...0xDBFF).contains(scalar) {
                guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw JSONSyntaxError(reason: "a \\u escape is the first half of a surrogate pair without the second", offset: start)
                }
                let second = index
                index += 2
                let low = try hexQuad(escapeAt: second)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw JSONSyntaxError(reason: "a \\u escape is the first half of a surrogate pair without the second", offset: start)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            // Not a surrogate now, so always a scalar.
            Unicode.UTF8.encode(Unicode.Scalar(scalar)!) { out.append($0) }
        default:
            throw JSONSyntaxError(reason: "an unknown escape \\\(Self.describeBare(letter)) in a string", offset: start)
        }
    }

    /// Four hex digits under `index`, for the `\u` escape at `escapeAt`.
    private mutating func hexQuad(escapeAt start: Int) throws(JSONSyntaxError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw JSONSyntaxError(reason: "a \\u escape without four hex digits", offset: start) }
        var value: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONSyntaxError(reason: "a \\u escape without four hex digits", offset: start)
            }
            value = value << 4 | UInt32(digit)
        }
        index += 4
        return value
    }

    // MARK: Numbers

    private mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = index
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let integerStart = index
        // The magnitude of a number with no fraction or exponent, while it fits in 64 bits.
        var magnitude: UInt64? = 0
        while index < bytes.count, Self.isDigit(bytes[index]) {
            if let known = magnitude {
                let (times10, overflow) = known.multipliedReportingOverflow(by: 10)
                let (sum, carry) = times10.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
                magnitude = overflow || carry ? nil : sum
            }
            index += 1
        }
        guard index > integerStart else { throw unexpectedOrEnd("where a digit was expected") }
        if index - integerStart > 1, bytes[integerStart] == UInt8(ascii: "0") {
            throw JSONSyntaxError(reason: "a number with a leading zero", offset: start)
        }
        var plain = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            plain = false
            index += 1
            let fractionStart = index
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
            guard index > fractionStart else { throw unexpectedOrEnd("where a digit of the fraction was expected") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            plain = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            let exponentStart = index
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
            guard index > exponentStart else { throw unexpectedOrEnd("where a digit of the exponent was expected") }
        }
        if plain, let magnitude {
            if !negative, magnitude <= UInt64(Int64.max) { return .integer(Int64(magnitude)) }
            if negative, magnitude <= UInt64(Int64.max) + 1 { return .integer(Int64(truncatingIfNeeded: 0 &- magnitude)) }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let double = Double(text), double.isFinite else {
            throw JSONSyntaxError(reason: "a number too large to represent", offset: start)
        }
        // As the decoder did: a fraction or an exponent that leaves a whole number in 64 bits makes
        // an integer. Below 2^53 the double is that number exactly; above, the decoder re-read the
        // text its own way (as a Decimal, truncated), and is asked again for these rare spellings.
        guard !plain, let whole = Int64(exactly: double) else { return .number(double) }
        if double.magnitude < 0x1p53 { return .integer(whole) }
        return (try? JSONDecoder().decode(JSONValue.self, from: Data(bytes[start..<index]))) ?? .number(double)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    // MARK: Reading

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Moves past `byte` if it is next; whether it was.
    private mutating func consume(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private func failure(_ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(reason: reason, offset: index)
    }

    private func unexpected(_ place: String) -> JSONSyntaxError {
        failure("unexpected \(Self.describe(bytes[index])) \(place)")
    }

    private func unexpectedOrEnd(_ place: String) -> JSONSyntaxError {
        index < bytes.count ? unexpected(place) : failure("the text ends \(place)")
    }

    private static func describe(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? "'\(describeBare(byte))'" : "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    private static func describeBare(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? String(UnicodeScalar(byte)) : "0x\(String(byte, radix: 16, uppercase: true))"
    }
}
