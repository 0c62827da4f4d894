import Crypto
import Foundation
import NotifiableCore
import _CryptoExtras

/// A service account the fake FCM gateway's token endpoint trusts: its keys and the project its tokens may send to.
struct TrustedServiceAccount: Sendable {
    var projectID: String
    var publicKeys: [_RSA.Signing.PublicKey]
}

/// Checks the RS256 JWT a service account signs to get an access token (the OAuth 2 JWT-bearer grant, RFC 7523),
/// as Google's token endpoint does, with Google's error wording where it is known.
enum ServiceAccountAssertion {
    /// The scopes that allow FCM sends.
    static let messagingScopes: Set<String> = [
        "https://www.googleapis.com/auth/firebase.messaging",
        "https://www.googleapis.com/auth/cloud-platform",
    ]
    /// How far `iat` may be in the future (clocks disagree a little).
    static let allowedClockSkewSeconds: Int64 = 60
    /// The longest `exp - iat` Google accepts.
    static let maxLifetimeSeconds: Int64 = 3600

    /// A verified assertion.
    struct Verified: Sendable, Equatable {
        var clientEmail: String
        var projectID: String
    }

    /// Why an assertion was refused: the OAuth error code and its description.
    struct Refusal: Error, Sendable, Equatable {
        var error: String
        var description: String

        static func invalidGrant(_ description: String) -> Refusal {
            Refusal(error: "invalid_grant", description: description)
        }
    }

    private struct Header: Decodable {
        var alg: String?
        var kid: String?
    }

    private struct Claims: Decodable {
        var iss: String?
        var scope: String?
        var aud: String?
        var iat: Int64?
        var exp: Int64?
    }

    static func verify(
        _ jwt: String, accounts: [String: TrustedServiceAccount], audience: String, now: Date
    ) -> Result<Verified, Refusal> {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerData = Base64URL.decode(parts[0]),
            let claimsData = Base64URL.decode(parts[1]),
            let signatureData = Base64URL.decode(parts[2]),
            let header = try? JSONDecoder().decode(Header.self, from: headerData),
            let claims = try? JSONDecoder().decode(Claims.self, from: claimsData)
        else {
            return .failure(.invalidGrant("Invalid JWT: the assertion is not header.claims.signature in base64url JSON."))
        }
        guard header.alg == "RS256" else {
            return .failure(.invalidGrant("Invalid JWT: alg must be RS256, not \(header.alg ?? "missing")."))
        }
        guard let issuer = claims.iss, !issuer.isEmpty else {
            return .failure(.invalidGrant("Invalid JWT: the iss claim (the service account's client_email) is missing."))
        }
        guard let account = accounts[issuer] else {
            return .failure(.invalidGrant("Invalid grant: account not found"))
        }
        let signingInput = Data(jwt.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let signature = _RSA.Signing.RSASignature(rawRepresentation: signatureData)
        let signedByAccount = account.publicKeys.contains { key in
            key.isValidSignature(signature, for: SHA256.hash(data: signingInput), padding: .insecurePKCS1v1_5)
        }
        guard signedByAccount else { return .failure(.invalidGrant("Invalid JWT Signature.")) }
        guard claims.aud == audience else {
            return .failure(
                .invalidGrant(
                    "Invalid JWT: Failed audience check. The expected value was: \(audience) "
                        + "The actual value was: \(claims.aud ?? "none")"
                )
            )
        }
        let nowSeconds = Int64(now.timeIntervalSince1970.rounded(.down))
        guard let issuedAt = claims.iat, let expiresAt = claims.exp,
            issuedAt <= nowSeconds + allowedClockSkewSeconds,
            expiresAt > nowSeconds,
            expiresAt > issuedAt,
            expiresAt - issuedAt <= maxLifetimeSeconds
        else {
            return .failure(
                .invalidGrant(
                    "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
                        + "Check your iat and exp values in the JWT claim."
                )
            )
        }
        let scopes = Set((claims.scope ?? "").split(separator: " ").map(String.init))
        guard !scopes.isDisjoint(with: messagingScopes) else {
            return .failure(
                Refusal(
                    error: "invalid_scope",
                    description: "Invalid OAuth scope or ID token audience provided: FCM sends need the scope "
                        + "https://www.googleapis.com/auth/firebase.messaging."
                )
            )
        }
        return .success(Verified(clientEmail: issuer, projectID: account.projectID))
    }
}
