import AsyncHTTPClient
import NIOCore
import NIOSSL

/// APNs over AsyncHTTPClient: one HTTP/2 connection per endpoint, a stream per push.
final class APNsAsyncHTTPClientTransport: APNsTransport {
    private let client: HTTPClient
    private let baseURL: String

    init(baseURL: String, trustedCAPEM: String?) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let pem = trustedCAPEM {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.timeout = .init(connect: .seconds(10))
        configuration.connectionPool = .init(idleTimeout: .minutes(10))
        self.client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        self.baseURL = baseURL
    }

    func send(_ request: APNsWireRequest, deadline: Duration) async throws -> APNsWireResponse {
        var http = HTTPClientRequest(url: "\(baseURL)/3/device/\(request.deviceToken)")
        http.method = .POST
        for (name, value) in request.headers { http.headers.add(name: name, value: value) }
        http.body = .bytes(ByteBuffer(bytes: request.payload))
        let timeout = TimeAmount.nanoseconds(deadline.components.seconds * 1_000_000_000 + deadline.components.attoseconds / 1_000_000_000)
        let response = try await client.execute(http, timeout: timeout)
        let body = try await response.body.collect(upTo: 64 * 1024)
        return APNsWireResponse(
            status: Int(response.status.code), apnsID: response.headers.first(name: "apns-id"),
            retryAfter: response.headers.first(name: "retry-after"), body: Array(buffer: body)
        )
    }

    func shutdown() async {
        try? await client.shutdown()
    }
}
