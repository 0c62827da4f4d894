import NotifiableCore

/// Reads an operator's JSON object field by field, answering every mistake with a 422 that
/// names the field.
struct AdminBody {
    let object: [String: JSONValue]

    init(_ body: JSONValue) throws {
        guard let object = body.objectValue else {
            throw APIError(status: .unprocessableContent, code: "invalid_body", message: "The body must be a JSON object.")
        }
        self.object = object
    }

    /// A non-empty string; nil when absent or null (an error when `required`).
    func string(_ key: String, required: Bool = false) throws -> String? {
        switch object[key] {
        case .string(let value)? where !value.isEmpty:
            guard !value.unicodeScalars.contains("\0") else {
                throw APIError(status: .unprocessableContent, code: "invalid_\(key)", message: "\(key) must not contain NUL characters.", field: key)
            }
            return value
        case nil, .null?, .string?:
            if required { throw APIError(status: .unprocessableContent, code: "missing_field", message: "\(key) is required.", field: key) }
            return nil
        default:
            throw APIError(status: .unprocessableContent, code: "invalid_type", message: "\(key) must be a string.", field: key)
        }
    }

    /// A whole number within `range`; nil when absent or null.
    func integer(_ key: String, in range: ClosedRange<Int64>) throws -> Int64? {
        switch object[key] {
        case nil, .null?: return nil
        case .integer(let value)? where range.contains(value): return value
        default:
            throw APIError(
                status: .unprocessableContent, code: "invalid_\(key)",
                message: "\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound).", field: key
            )
        }
    }

    /// Present with the value null: "back to the default", where absent means "unchanged".
    func isNull(_ key: String) -> Bool {
        if case .null? = object[key] { return true }
        return false
    }

    /// true or false; nil when absent or null.
    func boolean(_ key: String) throws -> Bool? {
        switch object[key] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw APIError(status: .unprocessableContent, code: "invalid_type", message: "\(key) must be true or false.", field: key)
        }
    }

    /// One of an enumeration's raw values; nil when absent or null.
    func choice<Choice: RawRepresentable & CaseIterable>(_ key: String, _ type: Choice.Type) throws -> Choice? where Choice.RawValue == String {
        guard let text = try string(key) else { return nil }
        guard let value = Choice(rawValue: text) else {
            let allowed = Choice.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or ")
            throw APIError(status: .unprocessableContent, code: "invalid_\(key)", message: "\(key) must be \(allowed).", field: key)
        }
        return value
    }

    /// Refuses keys the endpoint does not know, so a typo is not silently ignored.
    func allowOnly(_ keys: Set<String>) throws {
        if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
            throw APIError(
                status: .unprocessableContent, code: "unknown_field",
                message: "\(unknown) is not a field here; expected \(keys.sorted().joined(separator: ", ")).", field: unknown
            )
        }
    }
}
