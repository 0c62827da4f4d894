import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP2
import NIOPosix

/// A fake of Apple's APNs provider API: a real HTTP/2-over-TLS server on a local port, with a self-signed
/// certificate made with `openssl` at the first start in the process (and reused by later ones), that checks provider tokens (ES256 JWTs) and the request as APNs does,
/// answers with APNs's status codes and reasons, and records the pushes it accepts.
///
/// Tests drive failures with ``script(token:_:)`` (outcomes for one device token, used in order),
/// ``setRandomFailures(rate:seed:outcome:)`` (a deterministic share of failures), ``setFaults(_:)`` (a seeded mix of
/// 503s, resets, dropped connections, dead tokens and silence) and ``setLatency(_:)``; ``stats`` and
/// ``drainRequestLog()`` tell what it saw.
public final class SandboxAPNsGateway: Sendable {
    /// The port the gateway listens on.
    public let port: Int
    /// The host it was bound to.
    public let host: String
    /// The self-signed certificate (PEM) clients must trust.
    public let certificatePEM: String

    let rules: SandboxAPNsRules
    private let listener: SandboxGatewayListener
    private let logger: Logger

    /// `https://HOST:PORT` (IPv6 hosts in brackets); APNs requests go to `baseURL + "/3/device/" + token`.
    public var baseURL: String {
        SandboxGatewayListener.baseURL(host: host, port: port)
    }

    private init(host: String, rules: SandboxAPNsRules, listener: SandboxGatewayListener, logger: Logger) {
        self.host = host
        self.port = listener.port
        self.certificatePEM = listener.certificatePEM
        self.rules = rules
        self.listener = listener
        self.logger = logger
    }

    /// Makes a certificate and starts listening; `port` 0 picks a free port (see ``port``).
    /// - Parameter threads: event loop threads serving connections (default: one per core).
    public static func start(
        host: String = "127.0.0.1",
        port: Int = 0,
        threads: Int = System.coreCount,
        logger: Logger = Logger(label: "notifiable.fake-apns")
    ) async throws -> SandboxAPNsGateway {
        let connectionConfiguration = {
            var configuration = NIOHTTP2Handler.ConnectionConfiguration()
            configuration.initialSettings = [
                HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000),  // what APNs announces
                HTTP2Setting(parameter: .maxHeaderListSize, value: 1 << 16),
            ]
            return configuration
        }()
        let streamConfiguration = NIOHTTP2Handler.StreamConfiguration()

        let rules = SandboxAPNsRules()
        let listener = try await SandboxGatewayListener.start(
            host: host, port: port, threads: threads, applicationProtocols: ["h2"], name: "fake APNs gateway"
        ) { channel in
            channel.eventLoop.makeCompletedFuture {
                let pipeline = channel.pipeline.syncOperations
                _ = try pipeline.configureHTTP2Pipeline(
                    mode: .server,
                    connectionConfiguration: connectionConfiguration,
                    streamConfiguration: streamConfiguration
                ) { stream in
                    stream.eventLoop.makeCompletedFuture {
                        try stream.pipeline.syncOperations.addHandler(
                            SandboxAPNsStreamHandler(rules: rules, logger: logger)
                        )
                    }
                }
                try pipeline.addHandler(SandboxGatewayConnectionErrorHandler(logger: logger))
            }
        }
        let gateway = SandboxAPNsGateway(host: host, rules: rules, listener: listener, logger: logger)
        logger.debug("fake APNs gateway started", metadata: ["url": "\(gateway.baseURL)"])
        return gateway
    }

    /// Stops listening and closes every connection. Calling it again does nothing.
    public func stop() async throws {
        guard try await listener.stop() else { return }
        logger.debug("fake APNs gateway stopped", metadata: ["url": "\(baseURL)"])
    }

    // MARK: Behaviour

    /// Accepts provider tokens with `iss` = `teamID` and `kid` = `keyID` signed by the private half of `publicKey`.
    public func trust(teamID: String, keyID: String, publicKey: P256.Signing.PublicKey) {
        rules.trust(teamID: teamID, keyID: keyID, publicKey: publicKey)
    }

    /// Trusts the key in `pem`: a P-256 public key, or a private key such as an APNs `.p8` file (its public half is used).
    public func trust(teamID: String, keyID: String, pem: String) throws {
        trust(teamID: teamID, keyID: keyID, publicKey: try Self.publicKey(pem: pem))
    }

    /// The P-256 public key in `pem` (a public key, or the public half of a private key).
    public static func publicKey(pem: String) throws -> P256.Signing.PublicKey {
        if let publicKey = try? P256.Signing.PublicKey(pemRepresentation: pem) { return publicKey }
        if let privateKey = try? P256.Signing.PrivateKey(pemRepresentation: pem) { return privateKey.publicKey }
        throw SandboxGatewayError("No P-256 public or private key in PEM form.")
    }

    /// Forgets every trusted key (and the provider tokens already verified).
    public func distrustAllKeys() {
        rules.distrustAll()
    }

    /// Only these `apns-topic`s are accepted (others get 400 `TopicDisallowed`); nil accepts any topic.
    public func allowTopics(_ topics: Set<String>?) {
        rules.allowTopics(topics)
    }

    /// The next requests to `token` that pass validation get these outcomes, one each, in order; then accept.
    /// Replaces the token's remaining script; an empty array clears it.
    public func script(token: String, _ outcomes: [SandboxAPNsOutcome]) {
        rules.script(token: token, outcomes)
    }

    /// Each valid request without a scripted outcome fails with `outcome` with probability `rate`, drawn from
    /// SplitMix64 seeded with `seed`: the same seed and request order give the same failures. A rate of 0 turns this off.
    public func setRandomFailures(rate: Double, seed: UInt64, outcome: SandboxAPNsOutcome = .serviceUnavailable) {
        rules.setRandomFailures(rate: rate, seed: seed, outcome: outcome)
    }

    /// Fails a share of valid requests without a scripted outcome (before ``setRandomFailures(rate:seed:outcome:)``
    /// is consulted); nil turns it off. See ``SandboxGatewayFaultMix`` for how the draws stay the same from run to run.
    public func setFaults(_ mix: SandboxGatewayFaultMix?) {
        rules.setFaults(mix)
    }

    /// Whether ``stats`` counts per signing key and per token (off by default: a benchmark's million tokens would
    /// cost memory), and whether every request is kept for ``drainRequestLog()``.
    public func setObserving(statistics: Bool, requestLog: Bool = false) {
        rules.setObserving(statistics: statistics, requestLog: requestLog)
    }

    /// What the gateway has seen: requests per outcome, and, while observing, per signing key and per token.
    public var stats: SandboxGatewayStats {
        rules.stats
    }

    /// Removes and returns the requests recorded since the last call (only while the request log is on).
    public func drainRequestLog() -> [SandboxGatewayRequestRecord] {
        rules.drainRequestLog()
    }

    /// Waits this long before every answer (rejections included).
    public func setLatency(_ duration: Duration) {
        rules.setLatency(duration)
    }

    /// Whether accepted pushes are kept for ``acceptedPushes`` (on by default). Off, they are only counted in
    /// ``acceptedCount``, which keeps memory flat under a long benchmark.
    public func setRecording(_ enabled: Bool) {
        rules.setRecording(enabled)
    }

    /// Forgets the recorded pushes and counts, statistics, scripts, faults, random failures and latency;
    /// keeps the trusted keys, allowed topics, recording and observing settings.
    public func reset() {
        rules.reset()
    }

    // MARK: What happened

    /// The pushes answered 200, in the order they were accepted.
    public var acceptedPushes: [AcceptedPush] {
        rules.state.withLock { $0.accepted }
    }

    /// The accepted pushes to one device token (compared case-insensitively).
    public func pushes(to token: String) -> [AcceptedPush] {
        let token = token.lowercased()
        return rules.state.withLock { $0.accepted.filter { $0.token == token } }
    }

    /// The broadcasts to a channel answered 200, in order (each one's `token` is the channel's id).
    public func broadcasts(to channelID: String) -> [AcceptedPush] {
        rules.state.withLock { $0.broadcasts.filter { $0.token == channelID } }
    }

    /// The ids of the broadcast channels made and not deleted.
    public var channelIDs: Set<String> {
        rules.state.withLock { Set($0.channels.keys) }
    }

    /// How many pushes were answered 200 (counted even when recording is off).
    public var acceptedCount: Int {
        rules.state.withLock { $0.acceptedCount }
    }

    /// Every request received, rejected or dropped ones included.
    public var requestCount: Int {
        rules.state.withLock { $0.requestCount }
    }
}
