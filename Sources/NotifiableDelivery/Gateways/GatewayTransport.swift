import AsyncHTTPClient
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// An HTTP answer from a gateway (FCM, a browser push service) or a token endpoint.
public struct GatewayResponse: Sendable, Equatable {
    public var status: Int
    public var retryAfter: String?
    /// Where a push service says the message it took is (RFC 8030 §5).
    public var location: String?
    public var body: [UInt8]

    public init(status: Int, retryAfter: String? = nil, location: String? = nil, body: [UInt8]) {
        self.status = status
        self.retryAfter = retryAfter
        self.location = location
        self.body = body
    }
}

/// Which certificates a transport trusts as roots.
public struct TrustedRoots: Sendable, Equatable {
    /// A CA certificate (PEM); nil for the system's roots alone.
    public var pem: String?
    /// Whether the system's roots are trusted beside `pem` (a private push service among public
    /// ones), or `pem` alone (a test or staging gateway).
    public var keepsSystemRoots: Bool

    public init(pem: String?, keepsSystemRoots: Bool = false) {
        self.pem = pem
        self.keepsSystemRoots = keepsSystemRoots
    }

    func apply(to tls: inout TLSConfiguration) throws {
        guard let pem else { return }
        let certificates = try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
        if keepsSystemRoots {
            tls.additionalTrustRoots = [.certificates(certificates)]
        } else {
            tls.trustRoots = .certificates(certificates)
        }
    }
}

/// Carries POST requests to gateways and token endpoints. Throws on transport failures (no
/// connection, TLS, deadline passed); any HTTP answer is a response.
public protocol GatewayTransport: Sendable {
    func post(_ url: String, headers: [(String, String)], body: [UInt8], deadline: Duration) async throws -> GatewayResponse
    func shutdown() async
}

/// `GatewayTransport` over AsyncHTTPClient. TLS with ALPN makes it HTTP/2 against Google (and any gateway
/// that offers `h2`), so one connection per host carries many concurrent requests; HTTP/1.1 servers get
/// a pool of keep-alive connections.
public final class HTTPClientTransport: GatewayTransport {
    /// Error bodies are small JSON; anything larger is cut off rather than held in memory.
    static let maximumBodySize = 64 * 1024

    private let client: HTTPClient
    private let logger: Logger

    /// - Parameter trustedCAPEM: when set, only these certificates (PEM) are trusted as roots; else the
    ///   system's roots.
    public init(
        trustedCAPEM: String?, keepsSystemRoots: Bool = false, logger: Logger,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        try TrustedRoots(pem: trustedCAPEM, keepsSystemRoots: keepsSystemRoots).apply(to: &tls)
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            // Neither FCM nor a token endpoint redirects; following one would send credentials elsewhere.
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10))
        )
        configuration.httpVersion = .automatic
        self.client = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: configuration, backgroundActivityLogger: logger)
        self.logger = logger
    }

    public func post(_ url: String, headers: [(String, String)], body: [UInt8], deadline: Duration) async throws -> GatewayResponse {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        // One deadline for the whole exchange, the response body included.
        let end = NIODeadline.now() + TimeAmount(deadline)
        let response = try await client.execute(request, deadline: end, logger: logger)
        var buffer = try await response.body.collect(upTo: Self.maximumBodySize)
        return GatewayResponse(
            status: Int(response.status.code),
            retryAfter: response.headers.first(name: "retry-after"),
            location: response.headers.first(name: "location"),
            body: buffer.readBytes(length: buffer.readableBytes) ?? []
        )
    }

    public func shutdown() async {
        do {
            try await client.shutdown()
        } catch {
            logger.debug("HTTP client shutdown", metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}
