import AsyncHTTPClient
import Crypto
import Foundation
import NIOSSL
import NotifiableSandbox
import _CryptoExtras

/// A service account as a sender holds it: the key file's fields, and the RS256 assertions it signs for Google's
/// JWT-bearer grant.
struct ServiceAccountKey: Sendable {
    var projectID: String
    var clientEmail: String
    var tokenURI: String
    var privateKeyID: String
    var privateKey: _RSA.Signing.PrivateKey

    static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    /// Reads a key file as Google issues it.
    init(json: String) throws {
        guard let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            let projectID = object["project_id"] as? String,
            let clientEmail = object["client_email"] as? String,
            let tokenURI = object["token_uri"] as? String,
            let privateKeyID = object["private_key_id"] as? String,
            let privateKeyPEM = object["private_key"] as? String
        else { throw SandboxGatewayError("Not a service account key file: \(json)") }
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.tokenURI = tokenURI
        self.privateKeyID = privateKeyID
        privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
    }

    /// A signed assertion; the defaults make a valid one (issued now, for an hour, for FCM, to the token URI).
    func assertion(
        issuedAt: Date = Date(), lifetimeSeconds: Int = 3600, audience: String? = nil, issuer: String? = nil,
        scope: String? = messagingScope, algorithm: String = "RS256", signingKey: _RSA.Signing.PrivateKey? = nil
    ) throws -> String {
        let header = base64URL(Data(#"{"alg":"\#(algorithm)","typ":"JWT","kid":"\#(privateKeyID)"}"#.utf8))
        let iat = Int(issuedAt.timeIntervalSince1970)
        var claims: [String: Any] = [
            "iss": issuer ?? clientEmail, "aud": audience ?? tokenURI, "iat": iat, "exp": iat + lifetimeSeconds,
        ]
        if let scope { claims["scope"] = scope }
        let claimsData = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        let signingInput = header + "." + base64URL(claimsData)
        let signature = try (signingKey ?? privateKey).signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + base64URL(signature.rawRepresentation)
    }
}

/// A registration token as an Android app gets it (opaque, long, with a colon).
func registrationToken(_ seed: Int = 0) -> String {
    "d\(seed)fcmTok:APA91b" + String(repeating: "Xy9_-", count: 28) + String(seed)
}

/// A valid send body to `token`: notification, data and Android options.
func messageBody(
    to token: String, data: String = #"{"order":"42","kind":"shipped"}"#, android: String = #"{"priority":"HIGH","ttl":"3600s","collapse_key":"orders"}"#
) -> String {
    #"{"message":{"token":"\#(token)","notification":{"title":"Hello","body":"World"},"data":\#(data),"android":\#(android)}}"#
}

/// An answer as the client saw it, its JSON body read loosely.
struct FCMAnswer: Sendable {
    var status: UInt
    var isHTTP2: Bool
    var retryAfter: String?
    var contentType: String?
    var wwwAuthenticate: String?
    var bodyText: String

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(bodyText.utf8))) as? [String: Any] ?? [:]
    }

    /// `name` of a send's 200.
    var name: String? { json["name"] as? String }

    // Google API errors.
    var error: [String: Any] { json["error"] as? [String: Any] ?? [:] }
    var errorCode: Int? { error["code"] as? Int }
    var errorStatus: String? { error["status"] as? String }
    var errorMessage: String? { error["message"] as? String }
    var details: [[String: Any]] { error["details"] as? [[String: Any]] ?? [] }
    /// The FcmError detail's `errorCode`.
    var fcmErrorCode: String? {
        details.first { $0["@type"] as? String == "type.googleapis.com/google.firebase.fcm.v1.FcmError" }?["errorCode"]
            as? String
    }
    /// The fields of the BadRequest detail's violations.
    var violatedFields: [String] {
        details.filter { $0["@type"] as? String == "type.googleapis.com/google.rpc.BadRequest" }
            .flatMap { $0["fieldViolations"] as? [[String: Any]] ?? [] }
            .compactMap { $0["field"] as? String }
    }

    // OAuth token endpoint.
    var oauthError: String? { json["error"] as? String }
    var oauthErrorDescription: String? { json["error_description"] as? String }
    var accessToken: String? { json["access_token"] as? String }
    var expiresIn: Int? { json["expires_in"] as? Int }
    var tokenType: String? { json["token_type"] as? String }
}

/// A started fake FCM gateway with one service account it trusts, and a client that trusts its certificate.
struct FCMHarness: Sendable {
    let gateway: SandboxFCMGateway
    let client: HTTPClient
    let account: ServiceAccountKey

    static func start(httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic) async throws -> FCMHarness {
        let gateway = try await SandboxFCMGateway.start()
        do {
            let account = try ServiceAccountKey(json: try gateway.makeServiceAccount())
            return FCMHarness(
                gateway: gateway, client: try makeClient(trustingPEM: gateway.certificatePEM, httpVersion: httpVersion),
                account: account
            )
        } catch {
            try await gateway.stop()
            throw error
        }
    }

    static func makeClient(
        trustingPEM pem: String, httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic
    ) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = httpVersion
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    func shutdown() async throws {
        try await client.shutdown()
        try await gateway.stop()
    }

    func sendPath(project: String? = nil) -> String {
        "/v1/projects/\(project ?? account.projectID)/messages:send"
    }

    /// One request to the gateway.
    func request(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: String? = nil, timeoutSeconds: Int64 = 10
    ) async throws -> FCMAnswer {
        var request = HTTPClientRequest(url: gateway.baseURL + path)
        request.method = .init(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(Array(body.utf8)) }
        let response = try await client.execute(request, timeout: .seconds(timeoutSeconds))
        let bodyBuffer = try await response.body.collect(upTo: 1 << 20)
        return FCMAnswer(
            status: response.status.code,
            isHTTP2: response.version == .http2,
            retryAfter: response.headers.first(name: "retry-after"),
            contentType: response.headers.first(name: "content-type"),
            wwwAuthenticate: response.headers.first(name: "www-authenticate"),
            bodyText: String(buffer: bodyBuffer)
        )
    }

    /// A form POST to the token endpoint.
    func exchange(form: String) async throws -> FCMAnswer {
        try await request(
            "POST", "/token", headers: [("content-type", "application/x-www-form-urlencoded")], body: form
        )
    }

    /// The JWT-bearer grant with `assertion`.
    func exchange(assertion: String) async throws -> FCMAnswer {
        try await exchange(form: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)")
    }

    /// A working access token from a valid exchange.
    func accessToken() async throws -> String {
        let answer = try await exchange(assertion: try account.assertion())
        guard answer.status == 200, let token = answer.accessToken else {
            throw SandboxGatewayError("The token exchange failed: \(answer.status) \(answer.bodyText)")
        }
        return token
    }

    /// A send with `bearer` (nil: no authorization header).
    func send(_ body: String, bearer: String?, project: String? = nil) async throws -> FCMAnswer {
        var headers = [("content-type", "application/json; UTF-8")]
        if let bearer { headers.append(("authorization", "Bearer \(bearer)")) }
        return try await request("POST", sendPath(project: project), headers: headers, body: body)
    }
}

/// Runs `body` with a started harness, shutting it down afterwards whatever happens.
func withFCMGateway(
    httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic, _ body: (FCMHarness) async throws -> Void
) async throws {
    let harness = try await FCMHarness.start(httpVersion: httpVersion)
    do {
        try await body(harness)
    } catch {
        try? await harness.shutdown()
        throw error
    }
    try await harness.shutdown()
}
