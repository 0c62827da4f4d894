import Crypto
import Foundation
import NotifiableCore

public enum APNsKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is not a PEM private key (nor bare base64 DER).
    case notAPrivateKey(String)
    /// A valid private key, but not on the P-256 curve APNs token authentication (ES256) needs.
    case notP256(String)

    public var description: String {
        switch self {
        case .notAPrivateKey(let detail), .notP256(let detail): detail
        }
    }
}

/// Provider authentication tokens for APNs: ES256 JSON Web Tokens signed with the team's
/// `.p8` key.
public enum APNsJWT {
    /// `base64url(header).base64url(claims).base64url(signature)` with header
    /// `{"alg":"ES256","kid":keyID}` and claims `{"iat":seconds,"iss":teamID}`; the signature is
    /// the raw 64-byte r‖s form of ECDSA P-256 over SHA-256 of the first two parts.
    public static func make(keyID: String, teamID: String, issuedAt: Date, privateKey: P256.Signing.PrivateKey) -> String {
        let header = JSONObjectText.make([("alg", .string("ES256")), ("kid", .string(keyID))])
        let claims = JSONObjectText.make([
            ("iss", .string(teamID)), ("iat", .integer(Int64(issuedAt.timeIntervalSince1970.rounded(.down)))),
        ])
        let signingInput = base64URL(Data(header.utf8)) + "." + base64URL(Data(claims.utf8))
        // Signing with a valid key cannot fail in swift-crypto's P-256 implementation; an error
        // here would be a broken crypto backend, which no caller could handle better than by
        // crashing loudly.
        let signature = try! privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + base64URL(signature.rawRepresentation)
    }

    /// The key from the contents of an APNs `.p8` file: a PKCS#8 PEM
    /// (`-----BEGIN PRIVATE KEY-----`) holding a P-256 key. SEC1 PEM
    /// (`-----BEGIN EC PRIVATE KEY-----`) and the bare base64 body are accepted too.
    public static func privateKey(fromP8 pem: String) throws -> P256.Signing.PrivateKey {
        let text = pem.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty {
            throw APNsKeyError.notAPrivateKey("the APNs key is empty; expected the contents of a .p8 file (-----BEGIN PRIVATE KEY-----)")
        }
        if text.contains("-----BEGIN") {
            if let key = try? P256.Signing.PrivateKey(pemRepresentation: text) { return key }
            if let curve = otherCurve(pem: text) {
                throw APNsKeyError.notP256("the APNs key is a \(curve) key; APNs token authentication needs a P-256 (ES256) key from a .p8 file")
            }
            if text.contains("-----BEGIN RSA PRIVATE KEY-----") {
                throw APNsKeyError.notP256("the APNs key is an RSA key; APNs token authentication needs a P-256 (ES256) key from a .p8 file")
            }
            if !text.contains("PRIVATE KEY-----") {
                throw APNsKeyError.notAPrivateKey("the APNs key is a PEM block but not a private key; expected -----BEGIN PRIVATE KEY----- from a .p8 file")
            }
            throw APNsKeyError.notP256(
                "the APNs key could not be read as a P-256 private key; APNs token authentication needs the PKCS#8 P-256 key of a .p8 file (-----BEGIN PRIVATE KEY-----)"
            )
        }
        let compact = text.filter { !$0.isWhitespace }
        if let der = Data(base64Encoded: compact) {
            if let key = try? P256.Signing.PrivateKey(derRepresentation: der) { return key }
            if let curve = otherCurve(der: der) {
                throw APNsKeyError.notP256("the APNs key is a \(curve) key; APNs token authentication needs a P-256 (ES256) key from a .p8 file")
            }
            throw APNsKeyError.notAPrivateKey(
                "the APNs key could not be read as a private key; expected the contents of a .p8 file (-----BEGIN PRIVATE KEY-----)")
        }
        throw APNsKeyError.notAPrivateKey("the APNs key is not a PEM private key; expected the contents of a .p8 file (-----BEGIN PRIVATE KEY-----)")
    }

    /// Base64url without padding (RFC 7515 §2).
    public static func base64URL(_ data: some DataProtocol) -> String { Base64URL.encode(data) }

    private static func otherCurve(pem: String) -> String? {
        if (try? P384.Signing.PrivateKey(pemRepresentation: pem)) != nil { return "P-384" }
        if (try? P521.Signing.PrivateKey(pemRepresentation: pem)) != nil { return "P-521" }
        return nil
    }

    private static func otherCurve(der: Data) -> String? {
        if (try? P384.Signing.PrivateKey(derRepresentation: der)) != nil { return "P-384" }
        if (try? P521.Signing.PrivateKey(derRepresentation: der)) != nil { return "P-521" }
        return nil
    }
}

/// Compact JSON for a flat object with members in a given order (JWT header and claims).
enum JSONObjectText {
    enum Member { case string(String), integer(Int64) }

    static func make(_ members: [(String, Member)]) -> String {
        let body = members.map { key, value in
            let text: String
            switch value {
            case .string(let string): text = JSONText.quoted(string)
            case .integer(let number): text = String(number)
            }
            return JSONText.quoted(key) + ":" + text
        }
        return "{" + body.joined(separator: ",") + "}"
    }
}
