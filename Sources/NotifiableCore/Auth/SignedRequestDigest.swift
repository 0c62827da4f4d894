import Crypto
import Foundation

/// What identifies one signed request for replay detection: its credential, signature, method,
/// target (path and query), body and the unsigned headers that change what it does
/// (`Idempotency-Key`). A request repeated byte for byte within its signature's window is a replay.
public enum SignedRequestDigest {
    /// Which requests are checked: a server credential's, that change something. A replayed GET
    /// reads again. Device credentials ship inside every install of the app, so whoever could
    /// capture a device request can sign new ones: refusing its replay would protect nothing, and
    /// would cost every registration a write.
    public static func isChecked(method: String, role: CredentialRole) -> Bool {
        role == .server && method != "GET" && method != "HEAD"
    }

    /// Sixteen bytes of SHA-256 over the parts, each length-prefixed so no two requests share one.
    public static func of(
        accessID: String, signature: String, method: String, target: String, idempotencyKey: String?, body: some Sequence<UInt8>
    ) -> [UInt8] {
        var hasher = SHA256()
        for part in [accessID, signature, method, target, idempotencyKey ?? ""] {
            let bytes = Array(part.utf8)
            hasher.update(data: withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { Array($0) })
            hasher.update(data: bytes)
        }
        hasher.update(data: Array(SHA256.hash(data: Array(body))))
        return Array(hasher.finalize().prefix(16))
    }
}
