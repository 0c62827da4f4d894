import Crypto
import Foundation
import NotifiableCore
import _CryptoExtras

/// The signed JWT a service account trades for an OAuth2 access token (RFC 7523 JWT-bearer grant).
public enum FCMAssertion {
    /// The OAuth2 scope that allows sending FCM messages.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// How long an assertion is valid; Google accepts at most one hour.
    public static let lifetime: Int64 = 3600

    /// `base64url(header).base64url(claims).base64url(signature)` with header
    /// `{"alg":"RS256","typ":"JWT","kid":private_key_id}` (no `kid` when the account has none) and claims
    /// `{"iss":client_email,"scope":…,"aud":token_uri,"iat":now,"exp":now+3600}`, signed RSASSA-PKCS1-v1_5
    /// with SHA-256.
    public static func make(account: FCMServiceAccount, now: Date = Date()) throws -> String {
        var header: [(String, JSONObjectText.Member)] = [("alg", .string("RS256")), ("typ", .string("JWT"))]
        if let keyID = account.privateKeyID { header.append(("kid", .string(keyID))) }
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let claims = JSONObjectText.make([
            ("iss", .string(account.clientEmail)), ("scope", .string(scope)), ("aud", .string(account.tokenURI)),
            ("iat", .integer(issuedAt)), ("exp", .integer(issuedAt + lifetime)),
        ])
        let signingInput = APNsJWT.base64URL(Data(JSONObjectText.make(header).utf8)) + "." + APNsJWT.base64URL(Data(claims.utf8))
        let signature = try account.privateKey.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + APNsJWT.base64URL(signature.rawRepresentation)
    }
}
