/// What a user alias may be, wherever one arrives: a registration, a path, an erasure. One rule, so
/// every alias the registry can hold is one the erase and export calls accept.
public enum UserAlias {
    /// At most this many characters (code points, as PostgreSQL counts them).
    public static let maxLength = 255

    /// Why `alias` cannot be a user alias, said to the caller; nil when it can.
    public static func problem(_ alias: String) -> String? {
        if alias.isEmpty { return "is empty" }
        if alias.unicodeScalars.count > maxLength {
            return "is \(alias.unicodeScalars.count) characters; at most \(maxLength) are allowed"
        }
        // Control characters (NUL, tabs, line breaks, escapes) are never part of a person's id; one
        // in an alias is a caller's bug, and would leave a row that no later request could name.
        if alias.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "contains a control character"
        }
        return nil
    }
}
