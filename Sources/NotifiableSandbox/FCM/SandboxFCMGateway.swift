import Foundation
import Logging
import NIOCore
import NIOHTTP2
import _CryptoExtras

/// A fake of Google's FCM HTTP v1 API and of the OAuth 2 token endpoint its service accounts use, as one HTTPS server
/// on a local port (HTTP/2, and HTTP/1.1 for clients that ask for it, with the self-signed certificate the fake APNs
/// gateway uses). Service accounts made by ``makeServiceAccount(projectID:clientEmail:)`` point their `token_uri` here,
/// so a sender configured with one talks to the fake end to end: it exchanges an RS256 assertion for an access token,
/// then sends to `/v1/projects/{project}/messages:send`, and gets Google's answers, error bodies included.
///
/// Tests drive failures with ``script(token:_:)`` (outcomes for one registration token, used in order),
/// ``setRandomFailures(rate:seed:outcome:)`` (a deterministic share of failures), ``setFaults(_:)`` (a seeded mix of
/// 503s, resets, dropped connections, dead tokens and silence), latencies, access token lifetimes and
/// ``expireAccessTokens()``; ``stats`` and ``drainRequestLog()`` tell what it saw.
public final class SandboxFCMGateway: Sendable {
    /// The host it was bound to.
    public let host: String
    /// The port it listens on.
    public let port: Int
    /// The self-signed certificate (PEM) clients must trust.
    public let certificatePEM: String

    let rules: SandboxFCMRules
    private let listener: SandboxGatewayListener
    private let logger: Logger

    /// `https://HOST:PORT` (IPv6 hosts in brackets); sends go to `baseURL + "/v1/projects/{project_id}/messages:send"`.
    public var baseURL: String {
        SandboxGatewayListener.baseURL(host: host, port: port)
    }

    /// The OAuth 2 token endpoint, `baseURL + "/token"`: the `token_uri` of the service accounts it makes, and the
    /// `aud` their assertions must name.
    public var tokenURI: String {
        baseURL + "/token"
    }

    private init(host: String, rules: SandboxFCMRules, listener: SandboxGatewayListener, logger: Logger) {
        self.host = host
        self.port = listener.port
        self.certificatePEM = listener.certificatePEM
        self.rules = rules
        self.listener = listener
        self.logger = logger
    }

    /// Makes (or reuses) the certificate and starts listening; `port` 0 picks a free port (see ``port``).
    /// - Parameter threads: event loop threads serving connections.
    public static func start(
        host: String = "127.0.0.1",
        port: Int = 0,
        threads: Int = 1,
        logger: Logger = Logger(label: "notifiable.fake-fcm")
    ) async throws -> SandboxFCMGateway {
        let connectionConfiguration = {
            var configuration = NIOHTTP2Handler.ConnectionConfiguration()
            configuration.initialSettings = [
                HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),  // what Google's front ends announce
                HTTP2Setting(parameter: .maxHeaderListSize, value: 1 << 16),
            ]
            return configuration
        }()
        let rules = SandboxFCMRules()
        let listener = try await SandboxGatewayListener.start(
            host: host, port: port, threads: threads, applicationProtocols: ["h2", "http/1.1"], name: "fake FCM gateway"
        ) { channel in
            channel.configureCommonHTTPServerPipeline(
                connectionConfiguration: connectionConfiguration,
                streamConfiguration: NIOHTTP2Handler.StreamConfiguration(),
                h2ConnectionChannelConfigurator: { connection in
                    connection.eventLoop.makeCompletedFuture {
                        try connection.pipeline.syncOperations.addHandler(SandboxGatewayConnectionErrorHandler(logger: logger))
                    }
                },
                configurator: { streamOrConnection in
                    streamOrConnection.eventLoop.makeCompletedFuture {
                        try streamOrConnection.pipeline.syncOperations.addHandler(
                            SandboxHTTPRequestHandler(rules: rules, logger: logger)
                        )
                    }
                }
            )
        }
        let gateway = SandboxFCMGateway(host: host, rules: rules, listener: listener, logger: logger)
        rules.setTokenURI(gateway.tokenURI)
        logger.debug("fake FCM gateway started", metadata: ["url": "\(gateway.baseURL)"])
        return gateway
    }

    /// Stops listening and closes every connection. Calling it again does nothing.
    public func stop() async throws {
        guard try await listener.stop() else { return }
        logger.debug("fake FCM gateway stopped", metadata: ["url": "\(baseURL)"])
    }

    // MARK: Service accounts

    /// A new RSA-2048 service account for `projectID` whose `token_uri` is this gateway's ``tokenURI``; the gateway
    /// trusts it. Returns the key file as Google issues it (`type` `service_account`, `project_id`, `private_key_id`,
    /// `private_key` in PKCS#8 PEM, `client_email`, `client_id`, `auth_uri`, `token_uri`, …).
    /// - Parameter clientEmail: default: a new `firebase-adminsdk-xxxxx@{projectID}.iam.gserviceaccount.com`.
    public func makeServiceAccount(projectID: String = "demo-project", clientEmail: String? = nil) throws -> String {
        let account = try SandboxFCMServiceAccount.make(projectID: projectID, clientEmail: clientEmail, tokenURI: tokenURI)
        trust(clientEmail: account.clientEmail, projectID: projectID, publicKey: account.privateKey.publicKey)
        return account.json
    }

    /// Trusts assertions signed by `publicKey` with `iss` == `clientEmail`; their access tokens send to `projectID`.
    /// Another key for the same account and project is trusted as well (a rotated key); another project replaces it.
    public func trust(clientEmail: String, projectID: String, publicKey: _RSA.Signing.PublicKey) {
        rules.trust(clientEmail: clientEmail, projectID: projectID, publicKey: publicKey)
    }

    /// Trusts the account of a service account key file (its `client_email`, `project_id` and the public half of its
    /// `private_key`), made by this gateway or anyone else; returns its `client_email`.
    @discardableResult
    public func trust(serviceAccountJSON json: String) throws -> String {
        let account = try SandboxFCMServiceAccount.parse(json: json)
        trust(clientEmail: account.clientEmail, projectID: account.projectID, publicKey: account.publicKey)
        return account.clientEmail
    }

    /// The `client_email` of a service account key file; throws when the file lacks what trusting it needs.
    public static func serviceAccountClientEmail(json: String) throws -> String {
        try SandboxFCMServiceAccount.parse(json: json).clientEmail
    }

    // MARK: Behaviour

    /// The next valid sends to `token` get these outcomes, one each, in order; then they are accepted.
    /// Replaces the token's remaining script; an empty array clears it. Tokens are compared exactly.
    public func script(token: String, _ outcomes: [SandboxFCMOutcome]) {
        rules.script(token: token, outcomes)
    }

    /// Each valid send without a scripted outcome fails with `outcome` with probability `rate`, drawn from SplitMix64
    /// seeded with `seed`: the same seed and request order give the same failures. A rate of 0 turns this off.
    public func setRandomFailures(rate: Double, seed: UInt64, outcome: SandboxFCMOutcome = .unavailable()) {
        rules.setRandomFailures(rate: rate, seed: seed, outcome: outcome)
    }

    /// Fails a share of valid sends without a scripted outcome (before ``setRandomFailures(rate:seed:outcome:)`` is
    /// consulted); nil turns it off. See ``SandboxGatewayFaultMix`` for how the draws stay the same from run to run.
    public func setFaults(_ mix: SandboxGatewayFaultMix?) {
        rules.setFaults(mix)
    }

    /// Whether ``stats`` counts per service account and per token (off by default: a benchmark's million tokens
    /// would cost memory), and whether every send is kept for ``drainRequestLog()``.
    public func setObserving(statistics: Bool, requestLog: Bool = false) {
        rules.setObserving(statistics: statistics, requestLog: requestLog)
    }

    /// What the send endpoint has seen: requests per outcome, and, while observing, per service account (the
    /// signing key behind the access token) and per registration token.
    public var stats: SandboxGatewayStats {
        rules.stats
    }

    /// Removes and returns the sends recorded since the last call (only while the request log is on).
    public func drainRequestLog() -> [SandboxGatewayRequestRecord] {
        rules.drainRequestLog()
    }

    /// Waits this long before every answer of the send endpoint (rejections included).
    public func setLatency(_ duration: Duration) {
        rules.setLatency(duration)
    }

    /// Waits this long before every answer of the token endpoint (refusals included).
    public func setTokenLatency(_ duration: Duration) {
        rules.setTokenLatency(duration)
    }

    /// The `expires_in` of access tokens issued from now on, and how long they work (default 3599, as Google).
    public func setAccessTokenLifetime(seconds: Int) {
        rules.setAccessTokenLifetime(seconds: seconds)
    }

    /// Every access token issued so far is refused from now on with 401 `UNAUTHENTICATED`, as Google answers an
    /// expired token; a new exchange at the token endpoint gets a working one.
    public func expireAccessTokens() {
        rules.expireAccessTokens()
    }

    /// Whether accepted messages are kept for ``acceptedMessages`` (on by default). Off, they are only counted in
    /// ``acceptedCount``, which keeps memory flat under a long benchmark.
    public func setRecording(_ enabled: Bool) {
        rules.setRecording(enabled)
    }

    /// Forgets the recorded messages and counts, statistics, scripts, faults, random failures, latencies and the access
    /// token lifetime; keeps the trusted accounts, the access tokens issued, the recording and observing settings.
    public func reset() {
        rules.reset()
    }

    // MARK: What happened

    /// The messages answered 200, in the order they were accepted.
    public var acceptedMessages: [AcceptedFCMMessage] {
        rules.state.withLock { $0.accepted }
    }

    /// The accepted messages to one registration token.
    public func messages(to token: String) -> [AcceptedFCMMessage] {
        rules.state.withLock { $0.accepted.filter { $0.token == token } }
    }

    /// Removes and returns the accepted message with this `name` (`projects/{project}/messages/{id}`), or nil.
    public func takeMessage(named name: String) -> AcceptedFCMMessage? {
        rules.state.withLock { state in
            guard let index = state.accepted.firstIndex(where: { $0.name == name }) else { return nil }
            return state.accepted.remove(at: index)
        }
    }

    /// How many messages were answered 200 (counted even when recording is off; `validate_only` ones are not).
    public var acceptedCount: Int {
        rules.state.withLock { $0.acceptedCount }
    }

    /// Every request to a send path, rejected or dropped ones included.
    public var sendRequestCount: Int {
        rules.state.withLock { $0.sendRequestCount }
    }

    /// Every request to the token endpoint, refused ones included.
    public var tokenRequestCount: Int {
        rules.state.withLock { $0.tokenRequestCount }
    }

    /// How many access tokens the token endpoint issued.
    public var tokensIssued: Int {
        rules.state.withLock { $0.tokensIssued }
    }
}
