import Crypto
import Foundation

/// An admin API key: `nk_` and 32 random bytes in base64url. It acts as its operator, with the
/// operator's role and apps; the service keeps only its SHA-256, so it is shown once.
public enum OperatorKey {
    public static let prefix = "nk_"

    /// A new key's text.
    public static func generate() -> String {
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        return prefix
            + bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Whether `text` has a key's shape (anything else is not looked up).
    public static func isWellFormed(_ text: String) -> Bool {
        text.hasPrefix(prefix) && text.utf8.count == prefix.utf8.count + 43
            && text.utf8.dropFirst(prefix.utf8.count).allSatisfy { $0.isBase64URL }
    }

    /// Why `label` cannot name a key, said to the person making it; nil when it can. Counted as
    /// PostgreSQL counts (code points).
    public static func labelProblem(_ label: String) -> String? {
        if label.isEmpty || label.unicodeScalars.count > 64 { return "must be 1 to 64 characters" }
        if label.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) { return "may not hold control characters" }
        return nil
    }

    /// What is stored: the key's SHA-256.
    public static func digest(_ text: String) -> [UInt8] { Array(SHA256.hash(data: Data(text.utf8))) }
}

extension UInt8 {
    fileprivate var isBase64URL: Bool {
        (48...57).contains(self) || (65...90).contains(self) || (97...122).contains(self) || self == 45 || self == 95
    }
}
