import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// A small dedicated HTTP/2 client, used by the APNs and FCM senders alike: a few long-lived TLS connections, each multiplexing up to the
/// server's `SETTINGS_MAX_CONCURRENT_STREAMS` pushes (more wait in a queue), with writes coalesced so that a
/// burst of pushes costs one flush (and one TLS record batch, one `write`) rather than one each.
///
/// How it is put together:
/// - ``send(_:deadline:)`` picks the least-loaded connection slot and drops the push into the slot's inbox (a
///   mutex-protected array). The first push into an empty inbox schedules one task on the slot's event loop,
///   which takes everything in the inbox, opens a stream per push (HPACK headers built directly, a `ByteBuffer`
///   body) and flushes once.
/// - Everything else about a slot (its queue, its connection, stream bookkeeping, the deadline timer) lives
///   on that slot's event loop; see `HTTP2ConnectionSlot` and `HTTP2ConnectionHandler`.
/// - Connections are opened lazily, on the first push, and again whenever one closes or receives GOAWAY
///   and pushes are waiting. Pushes on streams a GOAWAY says were not processed are sent again on the next
///   connection; pushes in flight on a connection that drops fail with ``HTTP2ClientError/connectionClosed(_:)``
///   (the sender retries them later). A failed connection attempt fails the pushes waiting for it.
/// - Each push has a deadline; when it passes the push fails with ``HTTP2ClientError/deadlineExceeded`` and its
///   stream, if any, is reset. Task cancellation does the same with `CancellationError`.
public final class HTTP2Client: HTTP2Transport {
    private let slots: [HTTP2ConnectionSlot]
    private let nextSlot = Atomic<Int>(0)
    private let isShutDown = Atomic<Bool>(false)
    private let stats = HTTP2ClientStats()

    /// - Parameters:
    ///   - baseURL: `https://host[:port]` (port 443 when absent); a trailing `/` is ignored.
    ///   - trustedCAPEM: when set, these certificates (PEM) are trusted as roots: alone, or beside the
    ///     system's when `keepsSystemRoots`; else the system's roots.
    ///   - connections: how many TLS connections to spread pushes over (at least 1).
    ///   - eventLoopGroup: where the connections live; each connection slot is pinned to one of its loops.
    public convenience init(
        baseURL: String, trustedCAPEM: String?, keepsSystemRoots: Bool = false, connections: Int = 2,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger
    ) throws {
        try self.init(
            baseURL: baseURL, trustedCAPEM: trustedCAPEM, keepsSystemRoots: keepsSystemRoots, connections: connections,
            eventLoopGroup: eventLoopGroup, logger: logger, tuning: .init()
        )
    }

    /// Knobs that only tests change.
    struct Tuning: Sendable {
        /// Streams opened on one connection before it is replaced (HTTP/2 stream ids run out at 2^31).
        var maxStreamsPerConnection = Int(Int32.max / 2) - 1
        /// TCP connect, TLS handshake and the server's first SETTINGS must all happen within this.
        var connectTimeout = TimeAmount.seconds(10)
        /// A connection without streams for this long is closed (a new one is opened when needed).
        var idleTimeout = TimeAmount.minutes(5)
        /// Our receive window for a whole connection, topped up when half is used.
        var connectionWindow = 1 << 24
    }

    /// Connections opened so far (for tests).
    var connectionsOpened: Int { stats.connectionsOpened.load(ordering: .relaxed) }
    var connectionsClosed: Int { stats.connectionsClosed.load(ordering: .relaxed) }

    init(
        baseURL: String, trustedCAPEM: String?, keepsSystemRoots: Bool = false, connections: Int, eventLoopGroup: any EventLoopGroup,
        logger: Logger, tuning: Tuning
    ) throws {
        let endpoint = try HTTP2Endpoint(baseURL: baseURL)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        try TrustedRoots(pem: trustedCAPEM, keepsSystemRoots: keepsSystemRoots).apply(to: &tls)
        let configuration = HTTP2ClientConfiguration(
            endpoint: endpoint, sslContext: try NIOSSLContext(configuration: tls), tuning: tuning, stats: stats,
            logger: logger
        )
        var loops: [any EventLoop] = []
        for loop in eventLoopGroup.makeIterator() { loops.append(loop) }
        if loops.isEmpty { loops.append(eventLoopGroup.next()) }
        self.slots = (0..<max(1, connections)).map { index in
            HTTP2ConnectionSlot(index: index, eventLoop: loops[index % loops.count], configuration: configuration)
        }
    }

    public func send(_ request: HTTP2Request, deadline: Duration) async throws -> HTTP2Response {
        if isShutDown.load(ordering: .relaxed) { throw HTTP2ClientError.shutDown }
        let slot = pickSlot()
        let pending = HTTP2PendingRequest(wire: request, deadline: NIODeadline.now() + deadline.clampedTimeAmount, slot: slot)
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                slot.enqueue(pending, continuation)
            }
        } onCancel: {
            slot.cancel(pending)
        }
    }

    public func shutdown() async {
        isShutDown.store(true, ordering: .relaxed)
        for slot in slots {
            try? await slot.shutdown().get()
        }
    }

    /// The slot with the fewest pushes outstanding, starting the search at a rotating slot so ties spread.
    private func pickSlot() -> HTTP2ConnectionSlot {
        if slots.count == 1 { return slots[0] }
        let start = nextSlot.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max
        var best = slots[start % slots.count]
        var bestLoad = best.load.load(ordering: .relaxed)
        for offset in 1..<slots.count where bestLoad > 0 {
            let candidate = slots[(start + offset) % slots.count]
            let load = candidate.load.load(ordering: .relaxed)
            if load < bestLoad {
                best = candidate
                bestLoad = load
            }
        }
        return best
    }
}

/// Why ``HTTP2Client`` could not get an answer. (TLS, DNS and socket errors are passed through as thrown
/// by NIO and NIOSSL, e.g. `NIOSSLError.handshakeFailed` for an untrusted certificate.)
public enum HTTP2ClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The base URL is not `https://host[:port]`.
    case invalidBaseURL(String)
    /// The client was shut down.
    case shutDown
    /// The push's deadline passed before APNs answered.
    case deadlineExceeded
    /// The push was never written to a connection (its deadline passed while it waited for a
    /// stream, or its connection closed first): APNs cannot have it.
    case notSent(String)
    /// The connection closed (or failed) while the push was on it; APNs may or may not have processed it.
    case connectionClosed(String)
    /// No TLS connection with HTTP/2 could be set up in time.
    case connectTimeout
    /// The server did not pick `h2` in ALPN.
    case http2NotNegotiated(String?)
    /// The push's stream was reset (by APNs, or by the HTTP/2 layer).
    case streamReset(String)
    /// The answer's body was over 64 KiB.
    case responseTooLarge
    /// The answer had no `:status`.
    case malformedResponse
    /// A request header cannot be sent over HTTP/2.
    case invalidHeader(String)

    public var description: String {
        switch self {
        case .invalidBaseURL(let url): "invalid APNs base URL \"\(url)\": expected https://host[:port]"
        case .shutDown: "APNs client shut down"
        case .deadlineExceeded: "APNs request deadline exceeded"
        case .notSent(let detail): "APNs push not sent (\(detail))"
        case .connectionClosed(let detail): "APNs connection closed (\(detail))"
        case .connectTimeout: "APNs connect timeout (TCP, TLS and HTTP/2 setup)"
        case .http2NotNegotiated(let chosen): "APNs server did not negotiate HTTP/2 (ALPN chose \(chosen ?? "nothing"))"
        case .streamReset(let detail): "APNs stream reset (\(detail))"
        case .responseTooLarge: "APNs answer body over 64 KiB"
        case .malformedResponse: "APNs answer without :status"
        case .invalidHeader(let name): "request header \"\(name)\" cannot be sent over HTTP/2"
        }
    }
}

/// Where the connections go: parsed once from the base URL.
extension HTTP2Client {
    /// Throws when `baseURL` is not an endpoint this client can reach (`https://host[:port]`).
    public static func validate(baseURL: String) throws {
        _ = try HTTP2Endpoint(baseURL: baseURL)
    }
}

struct HTTP2Endpoint: Sendable {
    /// Host name or IP address (IPv6 without brackets), for connecting.
    let host: String
    let port: Int
    /// `:authority`: the host (IPv6 in brackets) and the port when it is not 443.
    let authority: String
    /// TLS SNI: the host name, or nil for an IP address (which SNI cannot carry; the certificate is then
    /// checked against the address).
    let serverName: String?

    init(baseURL: String) throws {
        let scheme = "https://"
        guard baseURL.lowercased().hasPrefix(scheme) else { throw HTTP2ClientError.invalidBaseURL(baseURL) }
        var rest = Substring(baseURL.dropFirst(scheme.count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("@"), !rest.contains("?"), !rest.contains("#") else {
            throw HTTP2ClientError.invalidBaseURL(baseURL)
        }
        let hostPart: Substring
        let portPart: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw HTTP2ClientError.invalidBaseURL(baseURL) }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.isEmpty {
                portPart = nil
            } else if after.hasPrefix(":") {
                portPart = after.dropFirst()
            } else {
                throw HTTP2ClientError.invalidBaseURL(baseURL)
            }
        } else if let colon = rest.lastIndex(of: ":") {
            hostPart = rest[..<colon]
            portPart = rest[rest.index(after: colon)...]
        } else {
            hostPart = rest
            portPart = nil
        }
        guard !hostPart.isEmpty else { throw HTTP2ClientError.invalidBaseURL(baseURL) }
        var port = 443
        if let portPart {
            guard let parsed = Int(portPart), (1...65535).contains(parsed) else {
                throw HTTP2ClientError.invalidBaseURL(baseURL)
            }
            port = parsed
        }
        let host = String(hostPart)
        let isIPAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
        let shownHost = host.contains(":") ? "[\(host)]" : host
        self.host = host
        self.port = port
        self.authority = port == 443 ? shownHost : "\(shownHost):\(port)"
        self.serverName = isIPAddress ? nil : host
    }
}

/// Counters for tests.
final class HTTP2ClientStats: Sendable {
    let connectionsOpened = Atomic<Int>(0)
    let connectionsClosed = Atomic<Int>(0)
}

/// What every connection slot of one client shares.
struct HTTP2ClientConfiguration: Sendable {
    let endpoint: HTTP2Endpoint
    let sslContext: NIOSSLContext
    let tuning: HTTP2Client.Tuning
    let stats: HTTP2ClientStats
    let logger: Logger

    /// The largest answer body kept.
    static let maxResponseBody = 64 * 1024
    /// Our per-stream receive window: larger than any answer we accept, so streams never wait for WINDOW_UPDATE.
    static let streamWindow = 1 << 20
    /// Streams we reset whose late frames the HTTP/2 layer should quietly drop (a deadline can reset many).
    static let recentlyResetStreams = 4096
    /// Assumed until the server says otherwise (as NIO does).
    static let defaultMaxConcurrentStreams = 100

    var http2: NIOHTTP2Handler.ConnectionConfiguration {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = [
            HTTP2Setting(parameter: .enablePush, value: 0),
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
            HTTP2Setting(parameter: .initialWindowSize, value: Self.streamWindow),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 1 << 16),
        ]
        configuration.maximumRecentlyResetStreams = Self.recentlyResetStreams
        return configuration
    }
}

extension Duration {
    /// As a `TimeAmount`, negative durations as zero and huge ones capped at about 100 years.
    var clampedTimeAmount: TimeAmount {
        let (seconds, attoseconds) = components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return .zero }
        if seconds >= 3_000_000_000 { return .seconds(3_000_000_000) }
        return TimeAmount(self)
    }
}
