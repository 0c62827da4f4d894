import Crypto
import Foundation
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NotifiableTesting
import Synchronization
import Testing

@testable import NotifiableDelivery
@testable import NotifiableSandbox

/// ``HTTP2Client`` against the fake APNs gateway over loopback (real TLS, real HTTP/2).
@Suite(.serialized, .timeLimit(.minutes(1))) struct SenderHTTP2ClientTests {
    static let teamID = "TEAMH2TEST"
    static let keyID = "KEYH2TEST1"
    static let topic = "com.example.h2"
    static let payload = #"{"aps":{"alert":{"title":"Hi","body":"There"}},"n_id":7}"#

    // MARK: Answers

    @Test func anAcceptedPushIsAnsweredWithItsAPNsIDAndRecorded() async throws {
        try await withClient { gateway, client, jwt in
            let token = Self.token(1)
            let apnsID = APNsRequestHeaders.apnsID(forDelivery: 42)
            let response = try await client.send(Self.push(token: token, jwt: jwt, apnsID: apnsID), deadline: .seconds(10))
            #expect(response.status == 200)
            #expect(response.header("apns-id")?.lowercased() == apnsID)
            #expect(response.retryAfter == nil)
            #expect(response.body.isEmpty)

            let pushes = gateway.pushes(to: token)
            try #require(pushes.count == 1)
            #expect(pushes[0].payloadString == Self.payload)
            #expect(pushes[0].headers["apns-topic"] == Self.topic)
            #expect(pushes[0].headers["apns-push-type"] == "alert")
            #expect(pushes[0].headers["apns-priority"] == "10")
            #expect(pushes[0].headers["apns-expiration"] == "0")
            #expect(pushes[0].headers["apns-id"]?.lowercased() == apnsID)
            #expect(pushes[0].headers["authorization"] == "bearer \(jwt)")

            // The same connection carries the next ones (and the HPACK-indexed authorization still decodes).
            for n in 2...5 {
                let next = try await client.send(Self.push(token: Self.token(n), jwt: jwt), deadline: .seconds(10))
                #expect(next.status == 200)
                #expect(gateway.pushes(to: Self.token(n)).first?.headers["authorization"] == "bearer \(jwt)")
            }
        }
    }

    @Test func anAPNsErrorComesBackAsAResponseWithItsJSONBody() async throws {
        try await withClient { gateway, client, jwt in
            let token = Self.token(410)
            gateway.script(token: token, [.unregistered(since: Date(timeIntervalSince1970: 1_700_000_000))])
            let response = try await client.send(Self.push(token: token, jwt: jwt), deadline: .seconds(10))
            #expect(response.status == 410)
            #expect(response.header("apns-id") != nil)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
            #expect(body["reason"] as? String == "Unregistered")
            #expect((body["timestamp"] as? NSNumber)?.int64Value == 1_700_000_000_000)
            #expect(gateway.pushes(to: token).isEmpty)

            let busy = Self.token(429)
            gateway.script(token: busy, [.tooManyRequests(retryAfterSeconds: 30)])
            let throttled = try await client.send(Self.push(token: busy, jwt: jwt), deadline: .seconds(10))
            #expect(throttled.status == 429)
            #expect(throttled.retryAfter == "30")
            #expect(String(decoding: throttled.body, as: UTF8.self) == #"{"reason":"TooManyRequests"}"#)

            // The classifier reads them as it did with AsyncHTTPClient.
            let outcome = APNsResponseClassifier.classify(
                status: response.status, body: response.body, retryAfter: response.retryAfter, apnsID: response.header("apns-id")
            )
            guard case .tokenDead = outcome else {
                Issue.record("410 Unregistered classified as \(outcome)")
                return
            }
        }
    }

    @Test func manyErrorAnswersDoNotExhaustTheReceiveWindow() async throws {
        // 600 bodies of 215 bytes are twice HTTP/2's initial 65,535-byte connection window: with the usual 16 MiB
        // window the client opens at once, and with a window left at 65,535 bytes, topped up when half is used.
        for window in [1 << 24, 65_535] {
            var tuning = HTTP2Client.Tuning()
            tuning.connectionWindow = window
            try await withClient(connections: 1, tuning: tuning) { gateway, client, jwt in
                gateway.setRandomFailures(rate: 1, seed: 1, outcome: .reject(status: 400, reason: String(repeating: "X", count: 200)))
                let statuses = try await Self.sendConcurrently(600, client: client, jwt: jwt)
                #expect(statuses == [400: 600])
                gateway.setRandomFailures(rate: 0, seed: 1)
                let next = try await client.send(Self.push(token: Self.token(1), jwt: jwt), deadline: .seconds(10))
                #expect(next.status == 200)
            }
        }
    }

    @Test func aHeaderHTTP2CannotCarryFailsOnlyThatPush() async throws {
        try await withClient(connections: 1) { gateway, client, jwt in
            var bad = Self.push(token: Self.token(1), jwt: jwt)
            bad.headers.append(("apns-collapse-id", "line\r\nbreak"))
            do {
                _ = try await client.send(bad, deadline: .seconds(10))
                Issue.record("a header value with CR LF was sent")
            } catch {
                guard case .streamReset = error as? HTTP2ClientError else {
                    Issue.record("unexpected error \(String(reflecting: error))")
                    return
                }
            }
            var nonASCII = Self.push(token: Self.token(2), jwt: jwt)
            nonASCII.headers.append(("apns-collapse-ïd", "x"))
            await #expect(throws: HTTP2ClientError.invalidHeader("apns-collapse-ïd")) {
                _ = try await client.send(nonASCII, deadline: .seconds(10))
            }

            // Upper-case names are lower-cased, as HTTP/2 requires.
            var shouting = Self.push(token: Self.token(3), jwt: jwt)
            shouting.headers = shouting.headers.map { ($0.0.uppercased(), $0.1) }
            let response = try await client.send(shouting, deadline: .seconds(10))
            #expect(response.status == 200)
            #expect(gateway.pushes(to: Self.token(3)).first?.headers["apns-topic"] == Self.topic)
            #expect(client.connectionsOpened == 1)
        }
    }

    // MARK: Load

    @Test func twoThousandConcurrentSendsOverTwoConnectionsAllSucceed() async throws {
        try await withClient(connections: 2) { gateway, client, jwt in
            gateway.setRecording(false)
            let statuses = try await Self.sendConcurrently(2_000, client: client, jwt: jwt)
            #expect(statuses == [200: 2_000])
            #expect(gateway.acceptedCount == 2_000)
            #expect(client.connectionsOpened == 2)
        }
    }

    @Test func morePushesThanTheServersStreamLimitWaitForAStreamOnOneConnection() async throws {
        // The fake announces SETTINGS_MAX_CONCURRENT_STREAMS 1000, as APNs does.
        try await withClient(connections: 1) { gateway, client, jwt in
            gateway.setRecording(false)
            gateway.setLatency(.milliseconds(20))
            let statuses = try await Self.sendConcurrently(2_500, client: client, jwt: jwt)
            #expect(statuses == [200: 2_500])
            #expect(gateway.acceptedCount == 2_500)
        }
    }

    @Test func aConnectionIsReplacedWhenItHasUsedItsStreams() async throws {
        var tuning = HTTP2Client.Tuning()
        tuning.maxStreamsPerConnection = 7
        try await withClient(connections: 1, tuning: tuning) { gateway, client, jwt in
            gateway.setRecording(false)
            for n in 0..<20 {
                let response = try await client.send(Self.push(token: Self.token(n), jwt: jwt), deadline: .seconds(10))
                #expect(response.status == 200)
            }
            let statuses = try await Self.sendConcurrently(100, client: client, jwt: jwt)
            #expect(statuses == [200: 100])
            #expect(gateway.acceptedCount == 120)
            #expect(client.connectionsOpened >= 120 / 7)
        }
    }

    // MARK: Failures

    @Test func aDroppedConnectionFailsThePushOnItAndTheNextGoesOnANewConnection() async throws {
        try await withClient(connections: 1) { gateway, client, jwt in
            let first = try await client.send(Self.push(token: Self.token(1), jwt: jwt), deadline: .seconds(10))
            #expect(first.status == 200)

            let doomed = Self.token(0xD0)
            gateway.script(token: doomed, [.dropConnection])
            do {
                _ = try await client.send(Self.push(token: doomed, jwt: jwt), deadline: .seconds(10))
                Issue.record("a push on a dropped connection succeeded")
            } catch {
                guard case .connectionClosed = error as? HTTP2ClientError else {
                    Issue.record("unexpected error \(String(reflecting: error))")
                    return
                }
                // The gateway may have taken it before the connection went: tried again, its outcome unknown.
                guard case .outcomeUnknown = APNsResponseClassifier.classify(transportError: error) else {
                    Issue.record("a dropped connection is not classified as a retry of unknown outcome")
                    return
                }
            }

            let next = try await client.send(Self.push(token: Self.token(2), jwt: jwt), deadline: .seconds(10))
            #expect(next.status == 200)
            #expect(gateway.pushes(to: Self.token(2)).count == 1)
            #expect(client.connectionsOpened == 2)
        }
    }

    @Test func anIdleConnectionIsClosedAndReopenedWhenNeeded() async throws {
        var tuning = HTTP2Client.Tuning()
        // Long enough that three sends in a row fit within it on a starved machine.
        tuning.idleTimeout = .seconds(2)
        try await withClient(connections: 1, tuning: tuning) { gateway, client, jwt in
            for n in 0..<3 {
                let response = try await client.send(Self.push(token: Self.token(n), jwt: jwt), deadline: .seconds(10))
                #expect(response.status == 200)
            }
            #expect(client.connectionsOpened == 1)
            #expect(client.connectionsClosed == 0)
            // Closed once idle: waited for rather than timed, as a starved event loop closes it late.
            let giveUp = ContinuousClock.now + .seconds(30)
            while client.connectionsClosed == 0, ContinuousClock.now < giveUp { try await Task.sleep(for: .milliseconds(100)) }
            #expect(client.connectionsClosed == 1)
            let later = try await client.send(Self.push(token: Self.token(9), jwt: jwt), deadline: .seconds(10))
            #expect(later.status == 200)
            #expect(client.connectionsOpened == 2)
        }
    }

    @Test func aPushPastItsDeadlineThrowsPromptlyAndTheConnectionCarriesOn() async throws {
        try await withClient(connections: 1) { gateway, client, jwt in
            let warmUp = try await client.send(Self.push(token: Self.token(1), jwt: jwt), deadline: .seconds(10))
            #expect(warmUp.status == 200)
            let slow = Self.token(0x51)
            // The gateway would answer after 10 s; the deadline must end the wait long before.
            gateway.script(token: slow, [.delay(.seconds(10))])
            let clock = ContinuousClock()
            let started = clock.now
            await #expect(throws: HTTP2ClientError.deadlineExceeded) {
                _ = try await client.send(Self.push(token: slow, jwt: jwt), deadline: .milliseconds(200))
            }
            let elapsed = started.duration(to: clock.now)
            #expect(elapsed >= .milliseconds(150))
            #expect(elapsed < .seconds(4), "took \(elapsed)")

            // The stream was reset; the connection is still good.
            let next = try await client.send(Self.push(token: Self.token(2), jwt: jwt), deadline: .seconds(10))
            #expect(next.status == 200)
        }
    }

    @Test func aCancelledSendThrowsPromptly() async throws {
        try await withClient(connections: 1) { gateway, client, jwt in
            let slow = Self.token(0x52)
            gateway.script(token: slow, [.delay(.seconds(10))])
            let clock = ContinuousClock()
            let started = clock.now
            let task = Task { try await client.send(Self.push(token: slow, jwt: jwt), deadline: .seconds(30)) }
            try await Task.sleep(for: .milliseconds(100))
            task.cancel()
            await #expect(throws: CancellationError.self) { _ = try await task.value }
            #expect(started.duration(to: clock.now) < .seconds(4))

            let next = try await client.send(Self.push(token: Self.token(3), jwt: jwt), deadline: .seconds(10))
            #expect(next.status == 200)
        }
    }

    @Test func anUntrustedCertificateFailsTheSend() async throws {
        try await withFakeAPNs { gateway in
            let (_, jwt) = Self.trustNewKey(gateway)
            let client = try HTTP2Client(
                baseURL: gateway.baseURL, trustedCAPEM: nil, logger: Logger(label: "test.apns-h2")
            )
            let clock = ContinuousClock()
            let started = clock.now
            do {
                _ = try await client.send(Self.push(token: Self.token(1), jwt: jwt), deadline: .seconds(10))
                Issue.record("a push over an untrusted certificate succeeded")
            } catch {
                #expect(error is NIOSSLError, "\(String(reflecting: error))")
            }
            #expect(started.duration(to: clock.now) < .seconds(5))
            #expect(gateway.requestCount == 0)
            await client.shutdown()
        }
    }

    @Test func pushesAGoAwaySaysWereNotProcessedGoOutAgainOnANewConnection() async throws {
        // Each connection answers its first 3 pushes, then sends GOAWAY naming the last of them.
        let server = try await ScriptedHTTP2Server.start(answersPerConnection: 3)
        let client = try HTTP2Client(
            baseURL: "https://127.0.0.1:\(server.port)", trustedCAPEM: server.certificatePEM, connections: 1,
            logger: Logger(label: "test.apns-h2")
        )
        let statuses = try await Self.sendConcurrently(10, client: client, jwt: "x")
        #expect(statuses == [200: 10])
        #expect(client.connectionsOpened == 4)
        #expect(server.answered == 10)
        await client.shutdown()
        try await server.channel.close()
    }

    /// A GOAWAY with an error and last stream 0, as swift-nio-http2's server sends a peer it calls
    /// misbehaving after its application took the streams: nothing is sent again on its word; the
    /// push fails with the connection, an attempt of unknown outcome.
    @Test func aGoAwayWithAnErrorDoesNotResendWhatTheServerMayHaveTaken() async throws {
        let server = try await ScriptedHTTP2Server.start(calmDown: true)
        let client = try HTTP2Client(
            baseURL: "https://127.0.0.1:\(server.port)", trustedCAPEM: server.certificatePEM, connections: 1,
            logger: Logger(label: "test.apns-h2")
        )
        do {
            _ = try await client.send(Self.push(token: Self.token(1), jwt: "x"), deadline: .seconds(10))
            Issue.record("a push on a connection the server ended with ENHANCE_YOUR_CALM succeeded")
        } catch {
            guard case .outcomeUnknown = APNsResponseClassifier.classify(transportError: error) else {
                Issue.record("not an attempt of unknown outcome: \(String(reflecting: error))")
                return
            }
        }
        #expect(server.answered == 1, "the server took it once, and it was not sent again")
        await client.shutdown()
        try await server.channel.close()
    }

    @Test func aRefusedStreamIsSentAgain() async throws {
        let server = try await ScriptedHTTP2Server.start(refuseFirst: true)
        let client = try HTTP2Client(
            baseURL: "https://127.0.0.1:\(server.port)", trustedCAPEM: server.certificatePEM, connections: 1,
            logger: Logger(label: "test.apns-h2")
        )
        let response = try await client.send(Self.push(token: Self.token(1), jwt: "x"), deadline: .seconds(10))
        #expect(response.status == 200)
        #expect(server.answered == 1)
        #expect(client.connectionsOpened == 1)
        await client.shutdown()
        try await server.channel.close()
    }

    @Test func aServerThatDoesNotSpeakHTTP2IsRefusedClearly() async throws {
        let certificate = try await SelfSignedCertificate.make(extraHosts: ["127.0.0.1"])
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(certificate.certificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(certificate.privateKeyPEM.utf8), format: .pem))
        )
        tls.applicationProtocols = ["http/1.1"]
        let sslContext = try NIOSSLContext(configuration: tls)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)
        let client = try HTTP2Client(
            baseURL: "https://127.0.0.1:\(port)", trustedCAPEM: certificate.certificatePEM,
            logger: Logger(label: "test.apns-h2")
        )
        await #expect(throws: HTTP2ClientError.http2NotNegotiated(nil)) {  // no protocol in common
            _ = try await client.send(Self.push(token: Self.token(1), jwt: "x"), deadline: .seconds(10))
        }
        await client.shutdown()
        try await server.close()
    }

    @Test func aClosedPortFailsTheSendFast() async throws {
        // Bind and close a socket to find a port nobody listens on.
        let probe = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(probe.localAddress?.port)
        try await probe.close()
        let client = try HTTP2Client(
            baseURL: "https://127.0.0.1:\(port)", trustedCAPEM: nil, logger: Logger(label: "test.apns-h2")
        )
        await #expect(throws: (any Error).self) {
            _ = try await client.send(Self.push(token: Self.token(1), jwt: "x"), deadline: .seconds(10))
        }
        await client.shutdown()
    }

    @Test func sendsAfterShutdownThrow() async throws {
        try await withFakeAPNs { gateway in
            let (_, jwt) = Self.trustNewKey(gateway)
            let client = try HTTP2Client(
                baseURL: gateway.baseURL, trustedCAPEM: gateway.certificatePEM, logger: Logger(label: "test.apns-h2")
            )
            let response = try await client.send(Self.push(token: Self.token(1), jwt: jwt), deadline: .seconds(10))
            #expect(response.status == 200)

            // A push in flight fails when the client shuts down.
            let slow = Self.token(0x53)
            gateway.script(token: slow, [.delay(.seconds(40))])
            let inFlight = Task { try await client.send(Self.push(token: slow, jwt: jwt), deadline: .seconds(50)) }
            try await Task.sleep(for: .milliseconds(200))
            let clock = ContinuousClock()
            let started = clock.now
            await client.shutdown()
            await #expect(throws: HTTP2ClientError.shutDown) { _ = try await inFlight.value }
            // Failed by the shutdown, not answered by the gateway 40 s later or ended by its deadline.
            #expect(started.duration(to: clock.now) < .seconds(15))

            await #expect(throws: HTTP2ClientError.shutDown) {
                _ = try await client.send(Self.push(token: Self.token(2), jwt: jwt), deadline: .seconds(10))
            }
            #expect(gateway.pushes(to: Self.token(2)).isEmpty)
            await client.shutdown()  // twice is fine
        }
    }

    @Test func baseURLsAreParsed() throws {
        let plain = try HTTP2Endpoint(baseURL: "https://api.push.apple.com")
        #expect(plain.host == "api.push.apple.com")
        #expect(plain.port == 443)
        #expect(plain.authority == "api.push.apple.com")
        #expect(plain.serverName == "api.push.apple.com")

        let ported = try HTTP2Endpoint(baseURL: "https://api.sandbox.push.apple.com:2197/")
        #expect(ported.port == 2197)
        #expect(ported.authority == "api.sandbox.push.apple.com:2197")

        let ipv4 = try HTTP2Endpoint(baseURL: "https://127.0.0.1:8443")
        #expect(ipv4.serverName == nil)

        let ipv6 = try HTTP2Endpoint(baseURL: "https://[::1]:8443")
        #expect(ipv6.host == "::1")
        #expect(ipv6.authority == "[::1]:8443")
        #expect(ipv6.serverName == nil)

        for bad in ["http://example.com", "https://", "https://example.com:0", "https://example.com:x", "https://example.com/path"] {
            #expect(throws: HTTP2ClientError.invalidBaseURL(bad)) { try HTTP2Endpoint(baseURL: bad) }
        }
    }

    // MARK: Helpers

    static func token(_ n: Int) -> String {
        let hex = String(n, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }

    static func push(token: String, jwt: String, apnsID: String? = nil) -> HTTP2Request {
        var headers = [
            ("apns-topic", topic), ("apns-push-type", "alert"), ("apns-priority", "10"), ("apns-expiration", "0"),
        ]
        if let apnsID { headers.append(("apns-id", apnsID)) }
        headers.append(("authorization", "bearer \(jwt)"))
        return HTTP2Request.apnsPush(deviceToken: token, headers: headers, payload: Array(payload.utf8))
    }

    static func trustNewKey(_ gateway: SandboxAPNsGateway) -> (P256.Signing.PrivateKey, String) {
        let key = P256.Signing.PrivateKey()
        gateway.trust(teamID: teamID, keyID: keyID, publicKey: key.publicKey)
        return (key, APNsJWT.make(keyID: keyID, teamID: teamID, issuedAt: Date(), privateKey: key))
    }

    /// Sends `count` pushes at once; the statuses answered, counted.
    static func sendConcurrently(_ count: Int, client: HTTP2Client, jwt: String) async throws -> [Int: Int] {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<count {
                group.addTask {
                    try await client.send(push(token: token(0x10000 + n), jwt: jwt), deadline: .seconds(30)).status
                }
            }
            var statuses: [Int: Int] = [:]
            for try await status in group { statuses[status, default: 0] += 1 }
            return statuses
        }
    }

    func withClient(
        connections: Int = 2, tuning: HTTP2Client.Tuning = .init(),
        _ body: @Sendable (SandboxAPNsGateway, HTTP2Client, String) async throws -> Void
    ) async throws {
        try await withFakeAPNs { gateway in
            let (_, jwt) = Self.trustNewKey(gateway)
            let client = try HTTP2Client(
                baseURL: gateway.baseURL, trustedCAPEM: gateway.certificatePEM, connections: connections,
                eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: Logger(label: "test.apns-h2"),
                tuning: tuning
            )
            do {
                try await body(gateway, client, jwt)
            } catch {
                await client.shutdown()
                throw error
            }
            await client.shutdown()
        }
    }
}

/// A TLS HTTP/2 server for what the fake gateway does not do. On each connection it refuses the first request
/// with RST_STREAM(REFUSED_STREAM) when `refuseFirst`, and takes `answersPerConnection` requests: when the last of
/// them starts it sends GOAWAY naming its stream, answers 200 to it and the ones before, and leaves the rest.
final class ScriptedHTTP2Server: Sendable {
    let channel: any Channel
    let port: Int
    let certificatePEM: String
    private let counter: Counter

    /// Requests answered, over all connections.
    var answered: Int { counter.value.withLock { $0 } }

    private init(channel: any Channel, port: Int, certificatePEM: String, counter: Counter) {
        self.channel = channel
        self.port = port
        self.certificatePEM = certificatePEM
        self.counter = counter
    }

    /// `calmDown`: on the first request, count it taken, then send GOAWAY(0, ENHANCE_YOUR_CALM) and close, as
    /// swift-nio-http2's server does to a peer it calls misbehaving.
    static func start(answersPerConnection: Int = .max, refuseFirst: Bool = false, calmDown: Bool = false) async throws -> ScriptedHTTP2Server {
        let certificate = try await SelfSignedCertificate.make(extraHosts: ["127.0.0.1"])
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(certificate.certificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(certificate.privateKeyPEM.utf8), format: .pem))
        )
        tls.applicationProtocols = ["h2"]
        let sslContext = try NIOSSLContext(configuration: tls)
        let counter = Counter()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(NIOSSLServerHandler(context: sslContext))
                    try pipeline.addHandler(NIOHTTP2Handler(mode: .server))
                    try pipeline.addHandler(Handler(answers: answersPerConnection, refuseFirst: refuseFirst, calmDown: calmDown, counter: counter))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ScriptedHTTP2Server(
            channel: channel, port: channel.localAddress!.port!, certificatePEM: certificate.certificatePEM,
            counter: counter
        )
    }

    final class Counter: Sendable {
        let value = Mutex(0)
    }

    final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        typealias OutboundOut = HTTP2Frame

        let answers: Int
        var refuseFirst: Bool
        let calmDown: Bool
        let counter: Counter
        var started = 0
        var lastAccepted: HTTP2StreamID?
        var sentGoAway = false
        var ended: [HTTP2StreamID] = []

        init(answers: Int, refuseFirst: Bool, calmDown: Bool, counter: Counter) {
            self.answers = answers
            self.refuseFirst = refuseFirst
            self.calmDown = calmDown
            self.counter = counter
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            guard frame.streamID != .rootStream else { return }
            switch frame.payload {
            case .headers(let headers):
                started += 1
                if started == answers { lastAccepted = frame.streamID }
                if headers.endStream { ended.append(frame.streamID) }
            case .data(let data):
                if data.endStream { ended.append(frame.streamID) }
            default:
                break
            }
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            if calmDown, !ended.isEmpty {
                counter.value.withLock { $0 += ended.count }
                ended.removeAll()
                context.writeAndFlush(
                    wrapOutboundOut(
                        HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .rootStream, errorCode: .enhanceYourCalm, opaqueData: nil))),
                    promise: nil)
                context.close(promise: nil)
                return
            }
            // GOAWAY once the read's frames have gone through NIO (it treats later frames on the streams it
            // drops as errors); then answer what was accepted.
            if let lastAccepted, !sentGoAway {
                sentGoAway = true
                context.write(
                    wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastAccepted, errorCode: .noError, opaqueData: nil))),
                    promise: nil)
            }
            for streamID in ended where lastAccepted.map({ streamID <= $0 }) ?? true {
                if refuseFirst {
                    refuseFirst = false
                    context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.refusedStream))), promise: nil)
                    continue
                }
                counter.value.withLock { $0 += 1 }
                let headers = HPACKHeaders([(":status", "200"), ("apns-id", "00000000-0000-4000-8000-000000000001")])
                context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: true)))), promise: nil)
            }
            ended.removeAll()
            context.flush()
            context.fireChannelReadComplete()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // Stream errors on the refused streams; the client closes the connection when it is done with it.
        }
    }
}
