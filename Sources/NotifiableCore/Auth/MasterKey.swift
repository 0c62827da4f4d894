import Crypto
import Foundation

/// Encrypts secrets at rest (credential secrets, gateway keys) with AES-256-GCM.
/// The sealed form is nonce ‖ ciphertext ‖ tag; the associated data binds each secret to
/// the row it belongs to, so a ciphertext copied to another row does not open.
public struct MasterKey: Sendable {
    let key: SymmetricKey

    public init(key: SymmetricKey) {
        self.key = key
    }

    /// Reads the base64 form of 32 bytes (as `NOTIFIABLE_MASTER_KEY` holds it).
    public init?(base64: String) {
        guard let data = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)), data.count == 32 else {
            return nil
        }
        self.key = SymmetricKey(data: data)
    }

    public static func generate() -> MasterKey { MasterKey(key: SymmetricKey(size: .bits256)) }

    public var base64: String { key.withUnsafeBytes { Data($0).base64EncodedString() } }

    /// A short fingerprint recorded beside every secret this key seals, so that after a master
    /// key rotation each secret is opened with the key that sealed it. Derived one-way: it
    /// reveals nothing about the key.
    public var id: String {
        var hasher = SHA256()
        hasher.update(data: Data("NotifiableServer master key id".utf8))
        key.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        return hasher.finalize().prefix(6).map { String(format: "%02x", $0) }.joined()
    }

    public func seal(_ secret: String, boundTo context: String) throws -> [UInt8] {
        let box = try AES.GCM.seal(Data(secret.utf8), using: key, authenticating: Data(context.utf8))
        guard let combined = box.combined else { throw MasterKeyError.cannotSeal }
        return Array(combined)
    }

    public func open(_ sealed: [UInt8], boundTo context: String) throws -> String {
        do {
            let box = try AES.GCM.SealedBox(combined: Data(sealed))
            let plain = try AES.GCM.open(box, using: key, authenticating: Data(context.utf8))
            return String(decoding: plain, as: UTF8.self)
        } catch {
            throw MasterKeyError.cannotOpen
        }
    }
}

public enum MasterKeyError: Error, CustomStringConvertible {
    case cannotSeal
    case cannotOpen
    case unknownKey(id: String)

    public var description: String {
        switch self {
        case .cannotSeal: "could not encrypt a secret"
        case .cannotOpen: "a stored secret does not open with NOTIFIABLE_MASTER_KEY; is it the key the secrets were stored with?"
        case .unknownKey(let id):
            "a stored secret was sealed with master key \(id), which is neither NOTIFIABLE_MASTER_KEY nor in NOTIFIABLE_PREVIOUS_MASTER_KEYS; add that key to NOTIFIABLE_PREVIOUS_MASTER_KEYS and run `notifiable keys rotate`"
        }
    }
}
