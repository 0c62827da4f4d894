/// The tags a device carries: labels an app's backend (or the app) puts on devices to target
/// them with a tag expression. Case-sensitive, compared exactly.
public enum DeviceTags {
    public static let maxCount = 60
    public static let maxLength = 120
    /// How the rules read in messages.
    static let rule = "1 to \(maxLength) characters of letters, digits and _ @ # . : -"

    /// Whether `byte` may appear in a tag: ASCII letters, digits and `_ @ # . : -`. None of the
    /// expression operators (`&`, `|`, `!`, parentheses) or whitespace, so a tag never needs quoting.
    static func isTagByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "#"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    /// Prefixes that name a user (`user:alice`, `username:alice`, as Azure Notification Hubs'
    /// guide stamps them on the backend). Where an app requires verified aliases only its backend
    /// may set them: a device that could would put itself in another user's audience. Compared
    /// without regard to case, so `User:` is no way around it.
    public static let userPrefixes = ["user:", "username:"]

    /// Whether `tag` is under one of `userPrefixes`.
    public static func namesAUser(_ tag: String) -> Bool {
        let lower = tag.lowercased()
        return userPrefixes.contains { lower.hasPrefix($0) }
    }

    public static func isValid(_ tag: String) -> Bool {
        !tag.isEmpty && tag.utf8.count <= maxLength && tag.utf8.allSatisfy(isTagByte)
    }

    /// A JSON array of tags, validated, without duplicates, sorted. Items are named
    /// `path.index` in errors; `null` reads as no tags.
    public static func read(_ value: JSONValue, path: String) throws(ValidationError) -> [String] {
        let items: [JSONValue]
        switch value {
        case .null: return []
        case .array(let array): items = array
        default:
            throw ValidationError(
                code: "invalid_type", message: "\(path) must be an array of tags, not \(value.typeName).", field: path
            )
        }
        var tags = Set<String>()
        for (index, item) in items.enumerated() {
            let itemPath = "\(path).\(index)"
            guard case .string(let tag) = item else {
                throw ValidationError(code: "invalid_type", message: "\(itemPath) must be a tag (a string), not \(item.typeName).", field: itemPath)
            }
            guard isValid(tag) else {
                throw ValidationError(
                    code: "invalid_tag", message: "\(itemPath) \(quoted(tag)) is not a tag: tags are \(rule).", field: itemPath
                )
            }
            tags.insert(tag)
        }
        guard tags.count <= maxCount else { throw tooMany(tags.count, path: path) }
        return tags.sorted()
    }

    /// The refusal of a set of more than `maxCount` tags, saying how many it would be.
    public static func tooMany(_ count: Int, path: String) -> ValidationError {
        ValidationError(
            code: "too_many_tags", message: "\(path) would give the device \(count) tags; a device carries at most \(maxCount).",
            field: path
        )
    }

    /// A tag as shown in a message: quoted, and cut short when it is long (it may be anything).
    static func quoted(_ text: String) -> String {
        let shown = text.unicodeScalars.count > 40 ? String(String.UnicodeScalarView(text.unicodeScalars.prefix(40))) + "…" : text
        return "\"\(shown)\""
    }
}
