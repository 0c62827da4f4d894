import Foundation
import NotifiableCore

/// Trades a service account's signed assertion for an access token at its `token_uri` (OAuth2
/// JWT-bearer grant, RFC 7523): `POST grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=…`
/// as a form, answered `{"access_token": …, "expires_in": 3599, "token_type": "Bearer"}`.
struct FCMTokenEndpoint: Sendable {
    let account: FCMServiceAccount
    let transport: any GatewayTransport
    let timeout: Duration
    var now: @Sendable () -> Date = { Date() }

    /// Google's tokens live an hour; assumed when an answer leaves `expires_in` out.
    static let defaultLifetime: Duration = .seconds(3600)

    func exchange() async throws(FCMAccessTokenError) -> FCMAccessToken {
        let assertion: String
        do {
            assertion = try FCMAssertion.make(account: account, now: now())
        } catch {
            throw .misconfigured("the service account's private_key cannot sign: \(error)")
        }
        // Base64url and dots need no escaping in a form; the grant type's colons do.
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion
        let response: GatewayResponse
        do {
            response = try await transport.post(
                account.tokenURI,
                headers: [("content-type", "application/x-www-form-urlencoded"), ("accept", "application/json")],
                body: Array(form.utf8), deadline: timeout
            )
        } catch {
            throw .unavailable(
                "access token unavailable: \(TransportFailure.reason(error, peer: "the token endpoint"))", retryAfter: nil
            )
        }
        return try Self.grant(response, tokenURI: account.tokenURI).get()
    }

    /// Reads a token endpoint's answer.
    ///
    /// - 200 with an `access_token` → the token (`expires_in` seconds, an hour when absent).
    /// - 408, 429 and 5xx, and any other answer that is not a token → `.unavailable` (Retry-After kept).
    /// - Other 4xx (`invalid_grant`, `invalid_client`, `unauthorized_client`, 401, 403, 404, …) →
    ///   `.misconfigured`: the endpoint refused this service account, or `token_uri` is wrong.
    static func grant(_ response: GatewayResponse, tokenURI: String) -> Result<FCMAccessToken, FCMAccessTokenError> {
        let object = (try? JSONValue.decode(response.body))?.objectValue ?? [:]
        let status = response.status
        if status == 200 {
            guard case .string(let token)? = object["access_token"], !token.isEmpty,
                token.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
            else {
                return .failure(.unavailable("access token unavailable: \(tokenURI) answered 200 without an access_token", retryAfter: nil))
            }
            return .success(FCMAccessToken(value: token, lifetime: lifetime(object["expires_in"]) ?? defaultLifetime))
        }
        let answer = "\(tokenURI) answered \(status)" + (oauthError(object).map { " \($0)" } ?? "")
        if status == 408 || status == 429 || !(400..<500).contains(status) {
            return .failure(
                .unavailable(
                    "access token unavailable: \(answer)", retryAfter: RetryAfter.duration(response.retryAfter)
                ))
        }
        let advice =
            if case .string("invalid_grant")? = object["error"] {
                "the service account key was deleted or disabled, or this server's clock is wrong; generate a new key in the "
                    + "Firebase console (Project settings → Service accounts) and upload it"
            } else if status == 404 {
                "token_uri is not a token endpoint; upload the key file unchanged"
            } else {
                "the service account cannot sign in; check that it is enabled, or upload a new key"
            }
        return .failure(.misconfigured("access token refused: \(answer): \(advice)"))
    }

    /// `error: error_description` of an OAuth2 error body, or `STATUS: message` of a Google API one.
    private static func oauthError(_ object: [String: JSONValue]) -> String? {
        switch object["error"] {
        case .string(let error)?:
            if case .string(let description)? = object["error_description"], !description.isEmpty {
                return "\(error): \(TransportFailure.short(description))"
            }
            return error
        case .object(let error)?:
            let status = if case .string(let text)? = error["status"] { text } else { "error" }
            if case .string(let message)? = error["message"], !message.isEmpty {
                return "\(status): \(TransportFailure.short(message))"
            }
            return status
        default:
            return nil
        }
    }

    private static func lifetime(_ value: JSONValue?) -> Duration? {
        let seconds: Double? =
            switch value {
            case .integer(let number)?: Double(number)
            case .number(let number)?: number
            case .string(let text)?: Double(text)
            default: nil
            }
        guard let seconds, seconds.isFinite, seconds > 0, seconds < 1e7 else { return nil }
        return .milliseconds(Int64(seconds * 1000))
    }
}
