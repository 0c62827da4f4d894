import Crypto
import Foundation

/// What a credential pair may do. Device credentials ship inside mobile apps; server
/// credentials stay on the app's backend.
public enum CredentialRole: String, Sendable, Codable, CaseIterable {
    case device
    case server
}

/// An access id and secret key pair, as handed to a client once at creation.
public struct Credential: Sendable, Equatable {
    public let role: CredentialRole
    public let accessID: String
    public let secretKey: String

    public init(role: CredentialRole, accessID: String, secretKey: String) {
        self.role = role
        self.accessID = accessID
        self.secretKey = secretKey
    }

    /// Whether `text` could be an access id at all (letters, digits, `-`, `_`; at most 64), so
    /// that anything else is refused before it reaches the database.
    public static func isWellFormedAccessID(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45 || $0 == 95 }
    }

    /// A new pair: a 20-character access id and a secret of 32 random bytes, base64.
    public static func generate(role: CredentialRole) -> Credential {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        let suffix = String((0..<20).map { _ in alphabet[Int(generator.next(upperBound: UInt32(alphabet.count)))] })
        let secret = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
        return Credential(role: role, accessID: suffix, secretKey: secret)
    }
}
