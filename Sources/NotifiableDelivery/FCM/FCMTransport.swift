import AsyncHTTPClient
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// An HTTP answer from FCM or a token endpoint.
public struct FCMHTTPResponse: Sendable, Equatable {
    public var status: Int
    public var retryAfter: String?
    public var body: [UInt8]

    public init(status: Int, retryAfter: String? = nil, body: [UInt8]) {
        self.status = status
        self.retryAfter = retryAfter
        self.body = body
    }
}

/// Carries POST requests to FCM and to token endpoints. Throws on transport failures (no connection,
/// TLS, deadline passed); any HTTP answer is a response.
public protocol FCMTransport: Sendable {
    func post(_ url: String, headers: [(String, String)], body: [UInt8], deadline: Duration) async throws -> FCMHTTPResponse
    func shutdown() async
}

/// `FCMTransport` over AsyncHTTPClient. TLS with ALPN makes it HTTP/2 against Google (and any gateway
/// that offers `h2`), so one connection per host carries many concurrent requests; HTTP/1.1 servers get
/// a pool of keep-alive connections.
public final class FCMHTTPClient: FCMTransport {
    /// Error bodies are small JSON; anything larger is cut off rather than held in memory.
    static let maximumBodySize = 64 * 1024

    private let client: HTTPClient
    private let logger: Logger

    /// - Parameter trustedCAPEM: when set, only these certificates (PEM) are trusted as roots; else the
    ///   system's roots.
    public init(trustedCAPEM: String?, logger: Logger, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let pem = trustedCAPEM {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        }
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

    public func post(_ url: String, headers: [(String, String)], body: [UInt8], deadline: Duration) async throws -> FCMHTTPResponse {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        // One deadline for the whole exchange, the response body included.
        let end = NIODeadline.now() + TimeAmount(deadline)
        let response = try await client.execute(request, deadline: end, logger: logger)
        var buffer = try await response.body.collect(upTo: Self.maximumBodySize)
        return FCMHTTPResponse(
            status: Int(response.status.code),
            retryAfter: response.headers.first(name: "retry-after"),
            body: buffer.readBytes(length: buffer.readableBytes) ?? []
        )
    }

    public func shutdown() async {
        do {
            try await client.shutdown()
        } catch {
            logger.debug("FCM HTTP client shutdown", metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}
