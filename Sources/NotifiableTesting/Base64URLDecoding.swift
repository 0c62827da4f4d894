import Foundation

/// Decodes base64url without padding, as JWTs carry it: the tests' own reading, independent of
/// `Base64URL` in NotifiableCore, so a test of what the service signs does not check it with
/// the same code that wrote it.
public func decodeBase64URL(_ text: String) -> Data? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    return Data(base64Encoded: base64)
}
