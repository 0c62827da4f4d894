import Crypto
import Foundation

/// What identifies one signed request for replay detection: its credential and signature. The
/// signature already commits to the method, the content type, the body's hash, the path (with or
/// without the query, as the client signed it) and the Date; anything it does not cover (a query
/// added to a path-only signature, an `Idempotency-Key` header, a DELETE's body) is left out, so
/// changing it does not make a captured request new.
public enum SignedRequestDigest {
    /// Which requests are checked: a server credential's, that change something. A replayed GET
    /// reads again. Device credentials ship inside every install of the app, so whoever could
    /// capture a device request can sign new ones: refusing its replay would protect nothing, and
    /// would cost every registration a write.
    public static func isChecked(method: String, role: CredentialRole) -> Bool {
        role == .server && method != "GET" && method != "HEAD"
    }

    /// Sixteen bytes of SHA-256 over the parts, each length-prefixed so no two requests share one.
    public static func of(accessID: String, algorithm: APIAuth.Algorithm, signature: String) -> [UInt8] {
        var hasher = SHA256()
        for part in [accessID, "\(algorithm)", signature] {
            let bytes = Array(part.utf8)
            hasher.update(data: withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { Array($0) })
            hasher.update(data: bytes)
        }
        return Array(hasher.finalize().prefix(16))
    }
}
