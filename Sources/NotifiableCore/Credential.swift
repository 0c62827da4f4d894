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

    /// A new pair: a 20-character access id and a secret of 32 random bytes, base64.
    public static func generate(role: CredentialRole) -> Credential {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        let suffix = String((0..<20).map { _ in alphabet[Int(generator.next(upperBound: UInt32(alphabet.count)))] })
        let secret = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
        return Credential(role: role, accessID: suffix, secretKey: secret)
    }
}
