import Crypto
import Foundation

/// The browser's side of RFC 8291: opens an `aes128gcm` message with the subscription's private
/// key and secret. Written apart from the service's encryption, from the RFC, so the fake push
/// service checks what the sender produced rather than repeating it.
enum SandboxWebPushDecryption {
    static func decrypt(_ body: [UInt8], privateKey: P256.KeyAgreement.PrivateKey, authSecret: Data) -> [UInt8]? {
        // salt (16) | rs (4) | idlen (1) | keyid (idlen) | record
        guard body.count > 21 else { return nil }
        let salt = Data(body[0..<16])
        let idLength = Int(body[20])
        guard body.count >= 21 + idLength + 17 else { return nil }
        let serverPublic = Data(body[21..<(21 + idLength)])
        let record = Data(body[(21 + idLength)...])
        guard let server = try? P256.KeyAgreement.PublicKey(x963Representation: serverPublic),
            let shared = try? privateKey.sharedSecretFromKeyAgreement(with: server)
        else { return nil }
        let browserPublic = privateKey.publicKey.x963Representation
        let keyInfo = Data("WebPush: info".utf8) + [0] + browserPublic + serverPublic
        let ikm = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: authSecret, sharedInfo: keyInfo, outputByteCount: 32)
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let cek = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        guard let gcmNonce = try? AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }),
            let box = try? AES.GCM.SealedBox(nonce: gcmNonce, ciphertext: record.dropLast(16), tag: record.suffix(16)),
            let opened = try? AES.GCM.open(box, using: cek)
        else { return nil }
        // The last record: padding zeros after the delimiter 2 are removed.
        guard let delimiter = opened.lastIndex(where: { $0 != 0 }), opened[delimiter] == 2 else { return nil }
        return Array(opened[opened.startIndex..<delimiter])
    }
}
