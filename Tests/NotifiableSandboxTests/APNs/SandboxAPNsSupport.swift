import AsyncHTTPClient
import Crypto
import Foundation
import NIOSSL
import NotifiableSandbox

/// A provider's signing key, as an APNs `.p8` key would be, with the ES256 JWT it signs.
struct ProviderKey: Sendable {
    var teamID = "TEAM123456"
    var keyID = "KEY1234567"
    var privateKey = P256.Signing.PrivateKey()

    func token(
        issuedAt: Date = Date(), algorithm: String = "ES256", teamID: String? = nil, keyID: String? = nil
    ) throws -> String {
        let header = base64URL(Data(#"{"alg":"\#(algorithm)","kid":"\#(keyID ?? self.keyID)"}"#.utf8))
        let issuedAtSeconds = Int(issuedAt.timeIntervalSince1970)
        let claims = base64URL(Data(#"{"iss":"\#(teamID ?? self.teamID)","iat":\#(issuedAtSeconds)}"#.utf8))
        let signingInput = header + "." + claims
        let signature = try privateKey.signature(for: Data(signingInput.utf8)).rawRepresentation
        return signingInput + "." + base64URL(signature)
    }
}

func base64URL(_ data: Data) -> String {
    data.base64EncodedString()
        .replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// A device token as iOS gives it: 32 bytes as 64 hex characters.
func deviceToken(_ seed: Int = 0) -> String {
    var bytes = [UInt8](repeating: 0, count: 32)
    var value = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1
    for index in bytes.indices {
        value = value &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes[index] = UInt8(truncatingIfNeeded: value >> 56)
    }
    return bytes.map { String(format: "%02x", $0) }.joined()
}

let topic = "com.example.app"
let alertPayload = #"{"aps":{"alert":{"title":"Hello","body":"World"}}}"#

/// A push request; the defaults make a valid one once `authorization` is set.
struct PushRequest: Sendable {
    var method = "POST"
    var path: String
    var headers: [(String, String)]
    var body: String?

    init(token: String, jwt: String?, body: String? = alertPayload) {
        path = "/3/device/\(token)"
        headers = [("apns-topic", topic), ("apns-push-type", "alert")]
        if let jwt { headers.append(("authorization", "bearer \(jwt)")) }
        self.body = body
    }

    mutating func set(_ name: String, _ value: String?) {
        headers.removeAll { $0.0 == name }
        if let value { headers.append((name, value)) }
    }
}

/// An answer as the client saw it.
struct PushAnswer: Sendable {
    var status: UInt
    var isHTTP2: Bool
    var apnsID: String?
    var retryAfter: String?
    var contentType: String?
    var body: [String: any Sendable]

    var reason: String? { body["reason"] as? String }
    var timestamp: Int64? {
        if let value = body["timestamp"] as? Int64 { return value }
        if let value = body["timestamp"] as? Int { return Int64(value) }
        if let value = body["timestamp"] as? Double { return Int64(value) }
        return nil
    }
}

/// A started gateway trusting one provider key, and a client that trusts the gateway's certificate.
struct GatewayHarness: Sendable {
    let gateway: SandboxAPNsGateway
    let client: HTTPClient
    let key: ProviderKey

    static func start() async throws -> GatewayHarness {
        let gateway = try await SandboxAPNsGateway.start(threads: 1)
        let key = ProviderKey()
        gateway.trust(teamID: key.teamID, keyID: key.keyID, publicKey: key.privateKey.publicKey)
        do {
            return GatewayHarness(gateway: gateway, client: try makeClient(trusting: gateway), key: key)
        } catch {
            try await gateway.stop()
            throw error
        }
    }

    static func makeClient(trusting gateway: SandboxAPNsGateway) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(gateway.certificatePEM.utf8)))
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    func shutdown() async throws {
        try await client.shutdown()
        try await gateway.stop()
    }

    /// A valid push to `token`.
    func validPush(to token: String = deviceToken()) throws -> PushRequest {
        PushRequest(token: token, jwt: try key.token())
    }

    func send(_ request: PushRequest, timeoutSeconds: Int64 = 10) async throws -> PushAnswer {
        var httpRequest = HTTPClientRequest(url: gateway.baseURL + request.path)
        httpRequest.method = .init(rawValue: request.method)
        for (name, value) in request.headers { httpRequest.headers.add(name: name, value: value) }
        if let body = request.body { httpRequest.body = .bytes(Array(body.utf8)) }
        let response = try await client.execute(httpRequest, timeout: .seconds(timeoutSeconds))
        let bodyBuffer = try await response.body.collect(upTo: 1 << 16)
        let bodyBytes = Array(bodyBuffer.readableBytesView)
        var body: [String: any Sendable] = [:]
        if !bodyBytes.isEmpty, let object = try JSONSerialization.jsonObject(with: Data(bodyBytes)) as? [String: Any] {
            for (name, value) in object {
                if let text = value as? String {
                    body[name] = text
                } else if let number = value as? Int {
                    body[name] = number
                } else if let number = value as? Double {
                    body[name] = number
                }
            }
        }
        return PushAnswer(
            status: response.status.code,
            isHTTP2: response.version == .http2,
            apnsID: response.headers.first(name: "apns-id"),
            retryAfter: response.headers.first(name: "retry-after"),
            contentType: response.headers.first(name: "content-type"),
            body: body
        )
    }
}

/// Runs `body` with a started harness, shutting it down afterwards whatever happens.
func withGateway(_ body: (GatewayHarness) async throws -> Void) async throws {
    let harness = try await GatewayHarness.start()
    do {
        try await body(harness)
    } catch {
        try? await harness.shutdown()
        throw error
    }
    try await harness.shutdown()
}
