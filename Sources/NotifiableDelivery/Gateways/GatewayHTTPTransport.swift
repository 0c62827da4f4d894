import Logging
import NIOCore
import NIOPosix
import Synchronization

/// `GatewayTransport` over the HTTP/2 client APNs uses (``HTTP2Client``): long-lived connections per
/// origin, each multiplexing up to the server's stream limit, with writes coalesced into one flush per
/// burst. Through AsyncHTTPClient a worker reached about a third of what one HTTP/2 connection to the
/// same gateway carries (docs/performance.md); this client is the one APNs already reaches it with.
///
/// An origin that does not negotiate HTTP/2 (a plain HTTP/1.1 proxy) is remembered and served by
/// ``HTTPClientTransport`` instead, as is any URL that is not `https`.
public final class GatewayHTTPTransport: GatewayTransport {
    public static let defaultConnectionsPerOrigin = 2

    private enum Route {
        case http2(HTTP2Client)
        case http1
    }

    private let trustedCAPEM: String?
    private let keepsSystemRoots: Bool
    private let connectionsPerOrigin: Int
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let fallback: HTTPClientTransport
    private let routes = Mutex<[String: Route]>([:])
    /// Each URL's origin and path, worked out once: parsing it again for every message cost a tenth
    /// of a sending worker's CPU. At most `rememberedURLs` entries.
    private let origins = Mutex<[String: (origin: String, path: String)]>([:])

    /// - Parameters:
    ///   - trustedCAPEM: when set, only these certificates (PEM) are trusted as roots; else the system's roots.
    ///   - connectionsPerOrigin: TLS connections to each host (FCM, a token endpoint).
    public init(
        trustedCAPEM: String?, keepsSystemRoots: Bool = false, logger: Logger,
        connectionsPerOrigin: Int = GatewayHTTPTransport.defaultConnectionsPerOrigin,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        self.trustedCAPEM = trustedCAPEM
        self.keepsSystemRoots = keepsSystemRoots
        self.connectionsPerOrigin = connectionsPerOrigin
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.fallback = try HTTPClientTransport(
            trustedCAPEM: trustedCAPEM, keepsSystemRoots: keepsSystemRoots, logger: logger, eventLoopGroup: eventLoopGroup)
    }

    public func post(_ url: String, headers: [(String, String)], body: [UInt8], deadline: Duration) async throws -> GatewayResponse {
        guard let (origin, path) = originAndPath(url), case .http2(let client) = try route(origin) else {
            return try await fallback.post(url, headers: headers, body: body, deadline: deadline)
        }
        do {
            let answer = try await client.send(HTTP2Request(path: path, headers: headers, payload: body), deadline: deadline)
            return GatewayResponse(status: answer.status, retryAfter: answer.retryAfter, location: answer.header("location"), body: answer.body)
        } catch HTTP2ClientError.http2NotNegotiated(let chosen) {
            logger.info("a gateway does not speak HTTP/2; using HTTP/1.1", metadata: ["origin": "\(origin)", "alpn": "\(chosen ?? "none")"])
            routes.withLock { $0[origin] = .http1 }
            Task { await client.shutdown() }
            return try await fallback.post(url, headers: headers, body: body, deadline: deadline)
        }
    }

    public func shutdown() async {
        let clients = routes.withLock { routes in
            defer { routes = [:] }
            return routes.values.compactMap { route -> HTTP2Client? in
                if case .http2(let client) = route { return client }
                return nil
            }
        }
        for client in clients { await client.shutdown() }
        await fallback.shutdown()
    }

    private func route(_ origin: String) throws -> Route {
        try routes.withLock { routes in
            if let known = routes[origin] { return known }
            let client = try HTTP2Client(
                baseURL: origin, trustedCAPEM: trustedCAPEM, keepsSystemRoots: keepsSystemRoots, connections: connectionsPerOrigin,
                eventLoopGroup: eventLoopGroup,
                logger: logger
            )
            routes[origin] = .http2(client)
            return .http2(client)
        }
    }

    private func originAndPath(_ url: String) -> (origin: String, path: String)? {
        if let known = origins.withLock({ $0[url] }) { return known }
        guard let split = Self.split(url) else { return nil }
        // Web Push sends to a URL per browser: those are worked out each time rather than kept for ever.
        origins.withLock { if $0.count < Self.rememberedURLs { $0[url] = split } }
        return split
    }

    /// URLs whose split is kept: every app's FCM send and token URLs, not every browser's endpoint.
    static let rememberedURLs = 1024

    /// `https://host[:port]` and the path with its query, or nil for a URL this client does not carry.
    static func split(_ url: String) -> (origin: String, path: String)? {
        let scheme = "https://"
        guard url.lowercased().hasPrefix(scheme) else { return nil }
        let rest = url.dropFirst(scheme.count)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let origin = scheme + rest[..<slash]
        guard (try? HTTP2Client.validate(baseURL: origin)) != nil else { return nil }
        return (origin, String(rest[slash...]))
    }
}
