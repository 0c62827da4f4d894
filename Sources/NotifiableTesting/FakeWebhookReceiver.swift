import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A webhook receiver on a loopback port (plain HTTP/1.1) for tests: it records every request
/// and answers with the status it is told to, so a test can take it "down" (503) and back up.
public final class FakeWebhookReceiver: Sendable {
    public struct Received: Sendable {
        public let method: String
        public let path: String
        /// Header names lower-cased.
        public let headers: [String: String]
        public let body: [UInt8]
        /// The status this request was answered with.
        public let status: Int
    }

    public let port: Int
    public var url: String { "http://127.0.0.1:\(port)/hooks" }

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let shared: Shared

    private init(port: Int, group: MultiThreadedEventLoopGroup, channel: any Channel, shared: Shared) {
        self.port = port
        self.group = group
        self.channel = channel
        self.shared = shared
    }

    /// What the connections' handlers and the test share.
    private final class Shared: Sendable {
        let state = Mutex<(status: Int, retryAfter: String?, delay: Duration, received: [Received])>((200, nil, .zero, []))
        /// When set, answers announce a long body and send one byte of it per interval.
        let trickle = Mutex<Duration?>(nil)
    }

    public static func start() async throws -> FakeWebhookReceiver {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let shared = Shared()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(Handler(shared: shared))
                }
            }
        let channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        return FakeWebhookReceiver(port: channel.localAddress?.port ?? 0, group: group, channel: channel, shared: shared)
    }

    public func stop() async throws {
        try? await channel.close()
        try await group.shutdownGracefully()
    }

    /// Answers every request from now on with `status` (and `Retry-After` when given), `delay` after it arrived.
    public func answer(_ status: Int, retryAfter: String? = nil, after delay: Duration = .zero) {
        shared.state.withLock {
            $0.status = status
            $0.retryAfter = retryAfter
            $0.delay = delay
        }
    }

    /// Answers from now on with its head and then a body of 100,000 bytes, one byte every
    /// `interval`: a receiver that is slow to finish its answer rather than to start it.
    public func trickle(byteEvery interval: Duration?) {
        shared.trickle.withLock { $0 = interval }
    }

    public var received: [Received] { shared.state.withLock { $0.received } }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let shared: Shared
        var head: HTTPRequestHead?
        var body: [UInt8] = []

        init(shared: Shared) { self.shared = shared }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body = []
            case .body(let buffer):
                body += buffer.readableBytesView
            case .end:
                guard let head else { return }
                let (status, retryAfter, delay) = shared.state.withLock { state in
                    state.received.append(
                        Received(
                            method: head.method.rawValue, path: head.uri,
                            headers: Dictionary(head.headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first }),
                            body: body, status: state.status
                        ))
                    return (state.status, state.retryAfter, state.delay)
                }
                let trickle = shared.trickle.withLock { $0 }
                var headers = HTTPHeaders([("Content-Length", trickle == nil ? "0" : "100000")])
                if let retryAfter { headers.add(name: "Retry-After", value: retryAfter) }
                let response = HTTPResponseHead(version: head.version, status: .init(statusCode: status), headers: headers)
                self.head = nil
                if let trickle {
                    context.writeAndFlush(wrapOutboundOut(.head(response)), promise: nil)
                    let channel = context.channel
                    channel.eventLoop.scheduleRepeatedTask(initialDelay: TimeAmount(trickle), delay: TimeAmount(trickle)) { task in
                        guard channel.isActive else {
                            task.cancel()
                            return
                        }
                        channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: "x"))), promise: nil)
                    }
                    return
                }
                let write = { [self] in
                    context.write(self.wrapOutboundOut(.head(response)), promise: nil)
                    context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
                }
                if delay > .zero {
                    context.eventLoop.scheduleTask(in: TimeAmount(delay)) { write() }
                } else {
                    write()
                }
            }
        }
    }
}
