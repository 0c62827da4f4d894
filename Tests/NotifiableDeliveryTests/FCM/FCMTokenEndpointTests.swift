import AsyncHTTPClient
import Foundation
import NotifiableCore
import NotifiableTesting
import Testing
import _CryptoExtras

@testable import NotifiableDelivery

@Suite struct FCMTokenEndpointTests {
    static let tokenURI = "https://oauth2.example.test/token"

    func grant(_ status: Int, _ body: String, retryAfter: String? = nil) -> Result<FCMAccessToken, FCMAccessTokenError> {
        FCMTokenEndpoint.grant(GatewayResponse(status: status, retryAfter: retryAfter, body: Array(body.utf8)), tokenURI: Self.tokenURI)
    }

    @Test func postsASignedAssertionAsAForm() async throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let transport = ScriptedFCMTransport { _ in
            .json(200, #"{"access_token":"ya29.abc","expires_in":3599,"token_type":"Bearer"}"#)
        }
        let endpoint = FCMTokenEndpoint(account: FCMTestAccount.account(tokenURI: Self.tokenURI), transport: transport, timeout: .seconds(5), now: { now })
        let token = try await endpoint.exchange()
        #expect(token == FCMAccessToken(value: "ya29.abc", lifetime: .seconds(3599)))

        let request = try #require(transport.requests.first)
        #expect(request.url == Self.tokenURI)
        #expect(request.header("content-type") == "application/x-www-form-urlencoded")
        let prefix = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="
        #expect(request.text.hasPrefix(prefix))
        let assertion = String(request.text.dropFirst(prefix.count))
        let pieces = assertion.split(separator: ".").map(String.init)
        try #require(pieces.count == 3)
        let claimsJSON = try #require(decodeBase64URL(pieces[1]))
        let claims = try #require(try JSONValue.decode(claimsJSON).objectValue)
        #expect(claims["aud"] == .string(Self.tokenURI))
        #expect(claims["iat"] == .integer(1_800_000_000))
        let signature = _RSA.Signing.RSASignature(rawRepresentation: try #require(decodeBase64URL(pieces[2])))
        #expect(
            FCMTestAccount.key.publicKey.isValidSignature(
                signature, for: Data((pieces[0] + "." + pieces[1]).utf8), padding: .insecurePKCS1v1_5
            ))
    }

    @Test func aTransportFailureIsTransient() async {
        let transport = ScriptedFCMTransport { _ in throw HTTPClientError.connectTimeout }
        let endpoint = FCMTokenEndpoint(account: FCMTestAccount.account(), transport: transport, timeout: .seconds(5))
        await #expect(throws: FCMAccessTokenError.unavailable("access token unavailable: connect timeout", retryAfter: nil)) {
            try await endpoint.exchange()
        }
    }

    @Test func grantsAreRead() throws {
        #expect(try grant(200, #"{"access_token":"a","expires_in":120}"#).get() == FCMAccessToken(value: "a", lifetime: .seconds(120)))
        #expect(try grant(200, #"{"access_token":"a","expires_in":"90"}"#).get().lifetime == .seconds(90))
        // Without expires_in, Google's usual hour.
        #expect(try grant(200, #"{"access_token":"a"}"#).get().lifetime == .seconds(3600))
        #expect(try grant(200, #"{"access_token":"a","expires_in":-1}"#).get().lifetime == .seconds(3600))
    }

    @Test(arguments: [#"{"expires_in":3600}"#, #"{"access_token":""}"#, #"{"access_token":"a\r\nb"}"#, "<html>", ""])
    func anAnswerWithoutAUsableTokenIsTransient(_ body: String) {
        #expect(
            grant(200, body)
                == .failure(
                    .unavailable(
                        "access token unavailable: \(Self.tokenURI) answered 200 without an access_token", retryAfter: nil
                    )))
    }

    @Test func refusalsMeanTheConfigurationIsWrong() throws {
        let invalidGrant = grant(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
        #expect(
            invalidGrant
                == .failure(
                    .misconfigured(
                        "access token refused: \(Self.tokenURI) answered 400 invalid_grant: Invalid JWT Signature.: the service account key "
                            + "was deleted or disabled, or this server's clock is wrong; generate a new key in the Firebase console "
                            + "(Project settings → Service accounts) and upload it"
                    )))
        for (status, body) in [
            (401, #"{"error":"invalid_client","error_description":"The OAuth client was not found."}"#),
            (403, #"{"error":"unauthorized_client"}"#),
            (403, #"{"error":{"code":403,"message":"Service account disabled","status":"PERMISSION_DENIED"}}"#),
            (400, "not json"),
        ] {
            guard case .failure(.misconfigured(let reason)) = grant(status, body) else {
                Issue.record("\(status) \(body) is not a refusal")
                continue
            }
            #expect(reason.hasPrefix("access token refused: \(Self.tokenURI) answered \(status)"))
            #expect(reason.hasSuffix("the service account cannot sign in; check that it is enabled, or upload a new key"))
        }
        guard
            case .failure(.misconfigured(let reason)) = grant(403, #"{"error":{"code":403,"message":"Service account disabled","status":"PERMISSION_DENIED"}}"#)
        else { return }
        #expect(reason.contains("answered 403 PERMISSION_DENIED: Service account disabled"))
        guard case .failure(.misconfigured(let notFound)) = grant(404, "") else {
            Issue.record("404 is not a refusal")
            return
        }
        #expect(notFound.hasSuffix("token_uri is not a token endpoint; upload the key file unchanged"))
    }

    @Test func failuresOfTheEndpointAreTransient() {
        #expect(
            grant(503, #"{"error":"temporarily_unavailable"}"#, retryAfter: "12")
                == .failure(
                    .unavailable(
                        "access token unavailable: \(Self.tokenURI) answered 503 temporarily_unavailable", retryAfter: .seconds(12)
                    )))
        for status in [408, 429, 500, 502, 504, 302, 204] {
            guard case .failure(.unavailable) = grant(status, "") else {
                Issue.record("\(status) is not transient")
                continue
            }
        }
    }
}
