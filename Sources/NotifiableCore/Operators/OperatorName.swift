import Foundation

/// An operator's sign-in name: 1 to 64 letters, digits, `.`, `_`, `-` or `@`, compared
/// case-insensitively (stored lower-case), so an e-mail address works as a name.
public enum OperatorName {
    public static let maxLength = 64

    /// The name as stored, or nil when it is not a valid name.
    public static func normalized(_ text: String) -> String? {
        let name = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard (1...maxLength).contains(name.count),
            name.unicodeScalars.allSatisfy({ ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "._-@".unicodeScalars.contains($0) })
        else { return nil }
        return name
    }
}
