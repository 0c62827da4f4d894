import Crypto
import Foundation

/// A short-lived proof, minted by an app's backend, that a request acts for one user of the app.
///
/// Device credentials ship inside every install of an app, so an alias a device sends proves
/// nothing; a user token does. It is a JWT signed with HS256:
/// header `{"alg":"HS256","kid":"<generation>","typ":"JWT"}`,
/// claims `{"app":<app id>,"exp":<s>,"iat":<s>,"sub":"<user alias>"}`.
/// The key is derived per app and generation (`MasterKey.userTokenKey`); raising the app's
/// generation revokes every token minted before.
public struct UserToken: Sendable, Equatable {
    public let appID: Int64
    public let userAlias: String
    public let generation: Int
    public let issuedAt: Date
    public let expiresAt: Date

    /// The longest a token may live.
    public static let maximumLifetime: TimeInterval = 3600

    public init(appID: Int64, userAlias: String, generation: Int, issuedAt: Date, expiresAt: Date) {
        self.appID = appID
        self.userAlias = userAlias
        self.generation = generation
        // Whole seconds, as the token carries them.
        self.issuedAt = Date(timeIntervalSince1970: issuedAt.timeIntervalSince1970.rounded(.down))
        self.expiresAt = Date(timeIntervalSince1970: expiresAt.timeIntervalSince1970.rounded(.down))
    }

    /// The compact JWT, signed with `key`.
    public func signed(with key: SymmetricKey) -> String {
        let header = #"{"alg":"HS256","kid":"\#(generation)","typ":"JWT"}"#
        let claims = JSONValue.object([
            "app": .integer(appID), "exp": .integer(Int64(expiresAt.timeIntervalSince1970)),
            "iat": .integer(Int64(issuedAt.timeIntervalSince1970)), "sub": .string(userAlias),
        ]).jsonText()
        let signingInput = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        let signature = HMAC<SHA256>.authenticationCode(for: Data(signingInput.utf8), using: key)
        return signingInput + "." + Base64URL.encode(Data(signature))
    }

    /// What a token says, before its signature is checked: enough to find the app and the key
    /// generation to check it with.
    public static func unverified(_ text: String) throws(UserTokenError) -> UserToken {
        try parse(text).token
    }

    /// The token, once its signature verifies under one of `keys` and it has not expired at `now`.
    public static func verify(_ text: String, keys: [SymmetricKey], now: Date) throws(UserTokenError) -> UserToken {
        let (token, signingInput, signature) = try parse(text)
        guard keys.contains(where: { HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: Data(signingInput.utf8), using: $0) }) else {
            throw .badSignature
        }
        guard token.expiresAt > now else { throw .expired(token.expiresAt) }
        return token
    }

    private static func parse(_ text: String) throws(UserTokenError) -> (token: UserToken, signingInput: Substring, signature: Data) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard text.utf8.count <= 4096, parts.count == 3,
            let headerData = Base64URL.decode(parts[0]), let claimsData = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            case .object(let header)? = try? JSONDecoder().decode(JSONValue.self, from: headerData),
            case .object(let claims)? = try? JSONDecoder().decode(JSONValue.self, from: claimsData)
        else { throw .malformed }
        guard header["alg"] == .string("HS256"), case .string(let kid)? = header["kid"], let generation = Int(kid),
            case .integer(let appID)? = claims["app"], case .string(let alias)? = claims["sub"], !alias.isEmpty,
            case .integer(let issuedAt)? = claims["iat"], case .integer(let expiresAt)? = claims["exp"]
        else { throw .malformed }
        let token = UserToken(
            appID: appID, userAlias: alias, generation: generation,
            issuedAt: Date(timeIntervalSince1970: TimeInterval(issuedAt)), expiresAt: Date(timeIntervalSince1970: TimeInterval(expiresAt))
        )
        return (token, text[..<text.lastIndex(of: ".")!], signature)
    }
}

public enum UserTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed
    case badSignature
    case expired(Date)
    /// The app's user-token key was rotated after the token was minted.
    case revoked

    public var description: String {
        switch self {
        case .malformed:
            "The user token is not one this service minted (expected a JWT from POST /api/v1/users/:alias/tokens)."
        case .badSignature:
            "The user token's signature does not verify; mint a new one with POST /api/v1/users/:alias/tokens."
        case .expired(let date):
            "The user token expired at \(ISO8601DateFormatter().string(from: date)); mint a new one with POST /api/v1/users/:alias/tokens."
        case .revoked:
            "The user token was revoked: the app's user-token key was rotated since it was minted. Mint a new one."
        }
    }
}

extension MasterKey {
    /// The key that signs an app's user tokens of one generation, derived from this master key
    /// (HKDF-SHA256), so no further secret is stored.
    public func userTokenKey(appID: Int64, generation: Int) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: key, info: Data("NotifiableServer user tokens \(appID) \(generation)".utf8), outputByteCount: 32
        )
    }
}

extension MasterKeyring {
    /// The keys an app's user tokens of `generation` may be signed with: the current master
    /// key's first, then those of the previous master keys, so that rotating the master key
    /// signs nobody out.
    public func userTokenKeys(appID: Int64, generation: Int) -> [SymmetricKey] {
        ([current] + previous).map { $0.userTokenKey(appID: appID, generation: generation) }
    }
}
