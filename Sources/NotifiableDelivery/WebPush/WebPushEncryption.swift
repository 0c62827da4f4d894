import Crypto
import Foundation

/// Message encryption for Web Push (RFC 8291) in the `aes128gcm` content coding (RFC 8188): one
/// record, readable only by the browser that holds the subscription's private key and secret.
public enum WebPushEncryption {
    /// RFC 8291 §4: a push service must accept 4,096 bytes of body; the header (86 bytes), the
    /// padding delimiter and the tag leave 3,993 bytes of plaintext.
    public static let maximumPlaintext = 3993
    static let recordSize: UInt32 = 4096

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case invalidKeys
        case tooLarge(size: Int)

        public var description: String {
            switch self {
            case .invalidKeys: "invalid_keys: the subscription's p256dh key is not a P-256 point or its auth secret is not 16 bytes"
            case .tooLarge(let size):
                "payload_too_large: the Web Push message is \(size) bytes; at most \(WebPushEncryption.maximumPlaintext) fit one encrypted record"
            }
        }
    }

    /// The request body: salt, record size, the server's public key, then the sealed record.
    /// `serverKey` and `salt` are fresh for every message; tests pass them to check RFC 8291's example.
    public static func encrypt(
        _ plaintext: [UInt8], browserKey: Data, authSecret: Data,
        serverKey: P256.KeyAgreement.PrivateKey = P256.KeyAgreement.PrivateKey(),
        salt: Data = Data(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) })
    ) throws(Failure) -> [UInt8] {
        guard plaintext.count <= maximumPlaintext else { throw .tooLarge(size: plaintext.count) }
        guard authSecret.count == 16, salt.count == 16,
            let browser = try? P256.KeyAgreement.PublicKey(x963Representation: browserKey),
            let shared = try? serverKey.sharedSecretFromKeyAgreement(with: browser)
        else { throw .invalidKeys }
        let serverPublic = serverKey.publicKey.x963Representation
        let ecdh = shared.withUnsafeBytes { Data($0) }

        // RFC 8291 §3.3–3.4: the input keying material binds both public keys and the auth secret.
        let keyInfo = Data("WebPush: info".utf8) + [0] + browserKey + serverPublic
        let prkKey = HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: ecdh), salt: authSecret)
        let ikm = HKDF<SHA256>.expand(pseudoRandomKey: prkKey, info: keyInfo, outputByteCount: 32)
        // RFC 8188 §2.2–2.3: the content key and nonce from the salt; one record, so the nonce is not varied.
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let cek = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonceBytes = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)

        // The last (only) record ends with the delimiter 2 and no padding.
        let record = plaintext + [2]
        // A 12-byte nonce and a 16-byte key are always valid for AES-GCM: a failure here is a broken
        // crypto backend, not an input this function could refuse.
        let nonce = try! AES.GCM.Nonce(data: nonceBytes.withUnsafeBytes { Data($0) })
        let sealed = try! AES.GCM.seal(record, using: cek, nonce: nonce)

        var body = [UInt8](salt)
        withUnsafeBytes(of: recordSize.bigEndian) { body.append(contentsOf: $0) }
        body.append(UInt8(serverPublic.count))
        body.append(contentsOf: serverPublic)
        body.append(contentsOf: sealed.ciphertext)
        body.append(contentsOf: sealed.tag)
        return body
    }
}
