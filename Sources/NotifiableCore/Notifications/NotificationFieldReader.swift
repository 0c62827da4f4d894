/// Reads typed values out of a notification request's object, naming each field by the path the
/// client sent it under. `null` reads as absent.
struct NotificationFieldReader {
    struct Member {
        let value: JSONValue
        let path: String
    }

    let members: [String: Member]
    /// The prefix of keys not present (for messages about missing keys).
    let prefix: String

    /// The reader of a whole body: fields at the top level and/or under `"notification"`.
    init(body: JSONValue) throws(ValidationError) {
        guard var object = body.objectValue else {
            throw ValidationError(code: "invalid_body", message: "The request body must be a JSON object, not \(body.typeName).")
        }
        // PostgreSQL text and jsonb cannot hold U+0000: refuse it here, naming where it is.
        if let path = body.pathOfNullCharacter() {
            throw ValidationError(
                code: "invalid_character",
                message: "\(path) contains a NUL character (U+0000), which cannot be stored.",
                field: path
            )
        }
        var members: [String: Member] = [:]
        switch object.removeValue(forKey: "notification") {
        case nil, .null?:
            break
        case .object(let inner)?:
            for (key, value) in inner { members[key] = Member(value: value, path: "notification.\(key)") }
        case let other?:
            throw ValidationError(
                code: "invalid_type",
                message: "notification must be an object holding the notification's fields, not \(other.typeName).",
                field: "notification"
            )
        }
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            if members[key] != nil {
                throw ValidationError(
                    code: "conflicting_fields",
                    message: "\(key) is given both at the top level and as notification.\(key); send it once.",
                    field: key
                )
            }
            members[key] = Member(value: value, path: key)
        }
        self.members = members
        self.prefix = ""
    }

    /// The reader of a nested object whose own path is `prefix` without its trailing dot.
    init(object: [String: JSONValue], prefix: String) {
        var members: [String: Member] = [:]
        for (key, value) in object { members[key] = Member(value: value, path: prefix + key) }
        self.members = members
        self.prefix = prefix
    }

    /// The value under `key`, nil when absent or null.
    func member(_ key: String) -> Member? {
        guard let member = members[key], member.value != .null else { return nil }
        return member
    }

    func path(_ key: String) -> String { members[key]?.path ?? prefix + key }

    /// Refuses keys outside `known`: a typo would otherwise be silently ignored.
    func refuseUnknownKeys(_ known: Set<String>, hints: [String: String] = [:], in context: String = "a notification request") throws(ValidationError) {
        for (key, member) in members.sorted(by: { $0.value.path < $1.value.path }) where !known.contains(key) {
            var message = "\(member.path) is not a field of \(context)"
            let snake = Self.snakeCased(key)
            if let hint = hints[key] ?? hints[snake] ?? (known.contains(snake) ? snake : nil) {
                message += "; did you mean \(hint)?"
            } else {
                message += "; the fields are " + known.sorted().joined(separator: ", ") + "."
            }
            throw ValidationError(code: "unknown_field", message: message, field: member.path)
        }
    }

    static func typeError(_ path: String, expected: String, got value: JSONValue) -> ValidationError {
        ValidationError(code: "invalid_type", message: "\(path) must be \(expected), not \(value.typeName).", field: path)
    }

    static func tooLong(_ path: String, length: Int, max: Int, unit: String = "characters") -> ValidationError {
        ValidationError(code: "too_long", message: "\(path) is \(length) \(unit); at most \(max) are allowed.", field: path)
    }

    /// A string; nil when absent or null.
    func string(_ key: String) throws(ValidationError) -> String? {
        guard let member = member(key) else { return nil }
        guard case .string(let value) = member.value else {
            throw Self.typeError(member.path, expected: "a string", got: member.value)
        }
        return value
    }

    /// A string of at most `maxLength` characters. "" reads as absent, or is refused when
    /// `allowEmpty` is false.
    func text(_ key: String, maxLength: Int, allowEmpty: Bool = true) throws(ValidationError) -> String? {
        guard let value = try string(key) else { return nil }
        if value.isEmpty {
            guard allowEmpty else {
                throw ValidationError(code: "invalid_value", message: "\(path(key)) must not be empty.", field: path(key))
            }
            return nil
        }
        guard value.unicodeScalars.count <= maxLength else { throw Self.tooLong(path(key), length: value.unicodeScalars.count, max: maxLength) }
        return value
    }

    /// A boolean; nil when absent or null.
    func bool(_ key: String) throws(ValidationError) -> Bool? {
        guard let member = member(key) else { return nil }
        guard case .bool(let value) = member.value else {
            throw Self.typeError(member.path, expected: "true or false", got: member.value)
        }
        return value
    }

    /// An integer in `range`; nil when absent or null.
    func integer(_ key: String, in range: ClosedRange<Int64>) throws(ValidationError) -> Int64? {
        guard let member = member(key) else { return nil }
        guard case .integer(let value) = member.value else {
            throw Self.typeError(member.path, expected: "an integer", got: member.value)
        }
        guard range.contains(value) else {
            throw ValidationError(
                code: "out_of_range",
                message: "\(member.path) is \(value); it must be from \(range.lowerBound) to \(range.upperBound).",
                field: member.path
            )
        }
        return value
    }

    /// An array; nil when absent, null or empty. At most `maxCount` items.
    func array(_ key: String, expected: String, maxCount: Int) throws(ValidationError) -> (items: [JSONValue], path: String)? {
        guard let member = member(key) else { return nil }
        guard case .array(let items) = member.value else {
            throw Self.typeError(member.path, expected: expected, got: member.value)
        }
        guard items.count <= maxCount else {
            throw ValidationError(
                code: "too_many",
                message: "\(member.path) has \(items.count) entries; at most \(maxCount) are allowed in one request.",
                field: member.path
            )
        }
        return items.isEmpty ? nil : (items, member.path)
    }

    /// `threadId` → `thread_id`, `content-available` → `content_available`.
    static func snakeCased(_ key: String) -> String {
        var result = ""
        for character in key {
            if character == "-" {
                result.append("_")
            } else if character.isUppercase {
                if !result.isEmpty && !result.hasSuffix("_") { result.append("_") }
                result += character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }
}
