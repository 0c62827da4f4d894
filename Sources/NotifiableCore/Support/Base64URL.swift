import Foundation

/// Base64url without padding (RFC 7515 §2), the encoding of every part of a JWT.
public enum Base64URL {
    public static func encode(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of `text`, or nil when it is not unpadded base64url (padding and the `+` `/` alphabet are refused).
    public static func decode(_ text: Substring) -> Data? {
        var base64 = String(text)
        guard !base64.contains("="), !base64.contains("+"), !base64.contains("/") else { return nil }
        base64 = base64.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let remainder = base64.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { base64 += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: base64)
    }
}
