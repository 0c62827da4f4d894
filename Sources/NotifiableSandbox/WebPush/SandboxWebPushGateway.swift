import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP2
import NotifiableCore

/// A fake browser push service (RFC 8030) on a local port, HTTPS with HTTP/2 and HTTP/1.1: it
/// takes `POST /push/{subscription}`, checks the VAPID token and the headers as push services do,
/// opens the message when it made the subscription (``makeSubscription(applicationServerKey:)``
/// gives the endpoint and keys a browser would), records it, and answers 201 with a `Location`.
/// Tests script refusals per subscription (410, 429, 413, 403).
public final class SandboxWebPushGateway: Sendable {
    public let host: String
    public let port: Int
    /// The self-signed certificate (PEM) clients must trust.
    public let certificatePEM: String
    let rules: SandboxWebPushRules
    private let listener: SandboxGatewayListener
    private let logger: Logger

    /// `https://HOST:PORT`, the origin VAPID tokens name.
    public var baseURL: String { SandboxGatewayListener.baseURL(host: host, port: port) }

    private init(host: String, rules: SandboxWebPushRules, listener: SandboxGatewayListener, logger: Logger) {
        self.host = host
        self.port = listener.port
        self.certificatePEM = listener.certificatePEM
        self.rules = rules
        self.listener = listener
        self.logger = logger
    }

    public static func start(
        host: String = "127.0.0.1", port: Int = 0, threads: Int = 1, logger: Logger = Logger(label: "notifiable.fake-webpush")
    ) async throws -> SandboxWebPushGateway {
        let rules = SandboxWebPushRules()
        let listener = try await SandboxGatewayListener.start(
            host: host, port: port, threads: threads, applicationProtocols: ["h2", "http/1.1"], name: "fake push service"
        ) { channel in
            channel.configureCommonHTTPServerPipeline(
                connectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration(),
                streamConfiguration: NIOHTTP2Handler.StreamConfiguration(),
                h2ConnectionChannelConfigurator: { connection in
                    connection.eventLoop.makeCompletedFuture {
                        try connection.pipeline.syncOperations.addHandler(SandboxGatewayConnectionErrorHandler(logger: logger))
                    }
                },
                configurator: { streamOrConnection in
                    streamOrConnection.eventLoop.makeCompletedFuture {
                        try streamOrConnection.pipeline.syncOperations.addHandler(SandboxHTTPRequestHandler(rules: rules, logger: logger))
                    }
                }
            )
        }
        let gateway = SandboxWebPushGateway(host: host, rules: rules, listener: listener, logger: logger)
        rules.state.withLock { $0.origin = gateway.baseURL }
        return gateway
    }

    public func stop() async throws {
        _ = try await listener.stop()
    }

    /// A subscription as a browser would make it: its endpoint on this gateway and its keys
    /// (`PushSubscription.toJSON()`'s `keys`). With `applicationServerKey`, only requests signed by
    /// that VAPID key are taken, as push services bind a subscription to it.
    public func makeSubscription(applicationServerKey: String? = nil) -> (endpoint: String, keys: WebPushKeys) {
        let privateKey = P256.KeyAgreement.PrivateKey()
        let auth = Data(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) })
        return addSubscription(privateKey: privateKey, authSecret: auth, applicationServerKey: applicationServerKey)
    }

    /// A subscription whose keys the caller made (a test that decrypts with another implementation).
    public func addSubscription(
        privateKey: P256.KeyAgreement.PrivateKey, authSecret: Data, applicationServerKey: String? = nil
    ) -> (endpoint: String, keys: WebPushKeys) {
        let id = UUID().uuidString.lowercased()
        let serverKey = applicationServerKey.flatMap { Base64URL.decode(Substring($0)) }
        rules.state.withLock {
            $0.subscriptions[id] = SandboxWebPushRules.Subscription(
                privateKey: privateKey, authSecret: authSecret, applicationServerKey: serverKey)
        }
        let keys = WebPushKeys(p256dh: Base64URL.encode(privateKey.publicKey.x963Representation), auth: Base64URL.encode(authSecret))
        return ("\(baseURL)/push/\(id)", keys)
    }

    /// The next requests to the subscription of `endpoint` get these outcomes, in order; then they are accepted.
    public func script(endpoint: String, _ outcomes: [SandboxWebPushOutcome]) {
        let id = String(endpoint.split(separator: "/").last ?? "")
        rules.state.withLock { $0.scripts[id] = outcomes.isEmpty ? nil : outcomes.reversed() }
    }

    /// Whether accepted messages are kept for ``acceptedMessages`` (on by default); off, they are
    /// only counted in ``acceptedCount``.
    public func setRecording(_ enabled: Bool) { rules.state.withLock { $0.recording = enabled } }

    /// Messages accepted, recorded or not.
    public var acceptedCount: Int { rules.state.withLock { $0.acceptedCount } }

    /// Fails a share of valid requests (503, 410, resets, dropped connections, silence); nil turns it off.
    public func setFaults(_ mix: SandboxGatewayFaultMix?) { rules.setFaults(mix) }

    public func setObserving(statistics: Bool, requestLog: Bool) { rules.setObserving(statistics: statistics, requestLog: requestLog) }

    public func setLatency(_ duration: Duration) { rules.setLatency(duration) }

    /// What it has seen: requests per outcome and per VAPID key, and tokens accepted more than once.
    public var stats: SandboxGatewayStats { rules.stats }

    public func drainRequestLog() -> [SandboxGatewayRequestRecord] { rules.drainRequestLog() }

    /// The messages accepted so far, oldest first.
    public var acceptedMessages: [AcceptedWebPushMessage] { rules.state.withLock { $0.accepted } }

    /// TCP connections accepted, before any TLS or HTTP: whether anything reached it at all.
    public var connectionsAccepted: Int { listener.connectionsAccepted }

    /// Requests received, refused ones included.
    public var requestCount: Int { rules.state.withLock { $0.requestCount } }

    /// Removes and returns the accepted message answered with `location`.
    public func takeMessage(location: String) -> AcceptedWebPushMessage? {
        rules.state.withLock { state in
            guard let index = state.accepted.firstIndex(where: { $0.location == location }) else { return nil }
            return state.accepted.remove(at: index)
        }
    }
}
