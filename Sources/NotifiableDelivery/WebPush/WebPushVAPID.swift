import Crypto
import Foundation
import NotifiableCore

/// Voluntary Application Server Identification (RFC 8292): every request carries
/// `Authorization: vapid t=<JWT>, k=<public key>`, the JWT signed (ES256) with the app's VAPID key,
/// its audience the push service's origin, so a push service can tie a subscription to the key
/// that made it.
public enum WebPushVAPID {
    /// RFC 8292 §2: `exp` must be no more than 24 hours after the request. Twelve hours leaves
    /// room for clocks apart and for the cache below to reuse a token for hours.
    static let lifetime: TimeInterval = 12 * 3600

    /// The `Authorization` header's value.
    public static func authorization(
        audience: String, subject: String, privateKey: P256.Signing.PrivateKey, expiresAt: Date
    ) -> String {
        let header = JSONObjectText.make([("typ", .string("JWT")), ("alg", .string("ES256"))])
        let claims = JSONObjectText.make([
            ("aud", .string(audience)), ("exp", .integer(Int64(expiresAt.timeIntervalSince1970.rounded(.down)))),
            ("sub", .string(subject)),
        ])
        let signingInput = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        // As for APNs tokens: signing with a valid P-256 key cannot fail short of a broken backend.
        let signature = try! privateKey.signature(for: Data(signingInput.utf8))
        let token = signingInput + "." + Base64URL.encode(signature.rawRepresentation)
        return "vapid t=\(token), k=\(Base64URL.encode(privateKey.publicKey.x963Representation))"
    }

    /// The origin of an endpoint (`https://host[:port]`): the JWT's audience.
    public static func audience(of endpoint: URL) -> String? {
        guard let scheme = endpoint.scheme?.lowercased(), let host = endpoint.host else { return nil }
        let defaultPort = scheme == "https" ? 443 : 80
        if let port = endpoint.port, port != defaultPort { return "\(scheme)://\(host):\(port)" }
        return "\(scheme)://\(host)"
    }

    /// A key pair for an app: the private key as PEM, the public key as browsers take it.
    public static func newKeyPair() -> (privateKeyPEM: String, publicKey: String) {
        let key = P256.Signing.PrivateKey()
        return (key.pemRepresentation, Base64URL.encode(key.publicKey.x963Representation))
    }

    /// Reads an uploaded private key (PEM, PKCS#8 or SEC1, or the raw 32-byte scalar in base64url as
    /// the web-push libraries print it); nil when it is none of those on P-256.
    public static func privateKey(from text: String) -> P256.Signing.PrivateKey? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.contains("-----BEGIN") { return try? P256.Signing.PrivateKey(pemRepresentation: trimmed) }
        guard let raw = Base64URL.decode(Substring(trimmed.trimmingCharacters(in: CharacterSet(charactersIn: "=")))), raw.count == 32
        else { return nil }
        return try? P256.Signing.PrivateKey(rawRepresentation: raw)
    }
}
