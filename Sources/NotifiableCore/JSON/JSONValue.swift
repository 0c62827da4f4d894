import Foundation

/// Any JSON value. Request bodies are decoded into this first so that validation can name
/// the exact field at fault, keep unknown keys, and accept a value in more than one shape.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public var objectValue: [String: JSONValue]? {
        if case .object(let object) = self { return object }
        return nil
    }

    /// Short name of the JSON type, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The dotted path of the first string or key holding U+0000, if any.
    public func pathOfNullCharacter() -> String? {
        func join(_ base: String, _ key: String) -> String { base.isEmpty ? key : "\(base).\(key)" }
        func search(_ value: JSONValue, _ path: String) -> String? {
            switch value {
            case .string(let text): return text.utf8.contains(0) ? path : nil
            case .array(let items):
                for (index, item) in items.enumerated() {
                    if let found = search(item, join(path, String(index))) { return found }
                }
                return nil
            case .object(let members):
                for (key, member) in members.sorted(by: { $0.key < $1.key }) {
                    if key.utf8.contains(0) { return join(path, key) }
                    if let found = search(member, join(path, key)) { return found }
                }
                return nil
            case .null, .bool, .integer, .number: return nil
            }
        }
        return search(self, "")
    }

    /// The JSON text in `data` (see `JSONParser` for what it accepts).
    public static func decode(_ data: some DataProtocol) throws(JSONSyntaxError) -> JSONValue {
        if let parsed = data.withContiguousStorageIfAvailable({ bytes in Result { () throws(JSONSyntaxError) in try JSONParser.parse(bytes) } }) {
            return try parsed.get()
        }
        return try Array(data).withUnsafeBufferPointer { bytes throws(JSONSyntaxError) in try JSONParser.parse(bytes) }
    }

    /// Compact JSON text with sorted keys, as stored in jsonb columns, measured for size limits and
    /// sent as push payloads. Written directly rather than through `JSONEncoder`, which cost a sixth
    /// of a sending worker's CPU. The text is the encoder's byte for byte (`JSONValueTextTests`), but for
    /// control characters, DEL and line separators, which it escapes as `JSONText` does.
    public func jsonText() -> String {
        var out = ""
        appendJSON(to: &out)
        return out
    }

    func appendJSON(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .integer(let value): out += String(value)
        case .number(let value): out += Self.numberText(value)
        case .string(let text): JSONText.appendQuoted(text, to: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.appendJSON(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, key) in members.keys.sorted(by: Self.sortsBefore).enumerated() {
                if index > 0 { out += "," }
                JSONText.appendQuoted(key, to: &out)
                out += ":"
                members[key]?.appendJSON(to: &out)
            }
            out += "}"
        }
    }

    /// Whether every number is finite: JSON has no infinity or NaN (the decoder never makes them;
    /// a value built in code could).
    public var numbersAreFinite: Bool {
        switch self {
        case .number(let value): value.isFinite
        case .array(let items): items.allSatisfy(\.numbersAreFinite)
        case .object(let members): members.values.allSatisfy(\.numbersAreFinite)
        case .null, .bool, .integer, .string: true
        }
    }

    /// Keys in the order `JSONEncoder`'s `.sortedKeys` writes them.
    static func sortsBefore(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// A double as `JSONEncoder` writes it; rare in payloads, so the encoder itself is asked. A
    /// non-finite one, which it refuses, is written null (see `numbersAreFinite`).
    private static func numberText(_ value: Double) -> String {
        let encoder = JSONEncoder()
        guard let data = try? encoder.encode(value) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
