import Crypto
import Foundation

extension MasterKey {
    /// How the audit log names an erased person: HMAC-SHA256 of the app and alias under a key
    /// derived from this master key (HKDF-SHA256). Whoever knows an alias and holds the key can ask
    /// "was it erased?"; a copy of the database alone says nothing about who it was.
    public func erasedAliasDigest(alias: String, appID: Int64) -> String {
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: key, info: Data("NotifiableServer erased aliases".utf8), outputByteCount: 32)
        let code = HMAC<SHA256>.authenticationCode(for: Data("\(appID)\u{0}\(alias)".utf8), using: key)
        return Data(code).map { String(format: "%02x", $0) }.joined()
    }
}

extension MasterKeyring {
    /// The digests `alias` has under the current master key and each previous one, so an erasure
    /// logged before a key rotation is still found.
    public func erasedAliasDigests(alias: String, appID: Int64) -> [String] {
        ([current] + previous).map { $0.erasedAliasDigest(alias: alias, appID: appID) }
    }
}
