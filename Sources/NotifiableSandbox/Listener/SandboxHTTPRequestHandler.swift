import Logging
import NIOCore
import NIOHTTP1

/// What decides a fake gateway's answer to a request (FCM's, a Web Push service's).
protocol SandboxHTTPRules: Sendable {
    /// The gateway's name in log lines.
    var gatewayName: String { get }
    func decide(_ request: SandboxHTTPRequest) -> SandboxHTTPDecision
}

/// Serves a fake gateway's requests on an HTTP/2 stream (behind NIO's HTTP/2-to-HTTP/1 codec) or an HTTP/1.1
/// connection: gathers head and body, asks the rules, writes the answer.
final class SandboxHTTPRequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let rules: any SandboxHTTPRules
    private let logger: Logger
    private var request: SandboxHTTPRequest?
    private var keepAlive = true

    init(rules: any SandboxHTTPRules, logger: Logger) {
        self.rules = rules
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = SandboxHTTPRequest(head: head)
            keepAlive = head.isKeepAlive
        case .body(var buffer):
            request?.append(body: &buffer)
        case .end:
            guard var request else { return }
            self.request = nil
            request.connection = SandboxGatewayConnectionDropper.connectionNumber(of: context.channel)
            answer(request, context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("\(rules.gatewayName) request error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func answer(_ request: SandboxHTTPRequest, context: ChannelHandlerContext) {
        let channel = context.channel
        // An HTTP/2 stream has its connection as parent; HTTP/1.1 runs on the connection itself.
        let closeAfter = channel.parent == nil && !keepAlive
        switch rules.decide(request) {
        case .dropConnection:
            logger.debug("\(rules.gatewayName) drops the connection")
            SandboxGatewayConnectionDropper.drop(connectionOf: channel)
        case .resetStream:
            logger.debug("\(rules.gatewayName) resets a stream")
            // Closing an HTTP/2 stream channel before its answer sends RST_STREAM; HTTP/1.1 has only the connection.
            channel.close(promise: nil)
        case .noAnswer:
            logger.debug("\(rules.gatewayName) leaves a request unanswered")
        case .answer(let reply, let delay):
            if !(200..<300).contains(reply.status) {
                logger.debug(
                    "\(rules.gatewayName) refuses a request",
                    metadata: ["path": "\(request.path)", "status": "\(reply.status)", "body": "\(reply.body)"]
                )
            }
            if delay > .zero {
                channel.eventLoop.scheduleTask(in: TimeAmount(delay)) {
                    Self.write(reply, on: channel, close: closeAfter)
                }
            } else {
                Self.write(reply, on: channel, close: closeAfter)
            }
        }
    }

    private static func write(_ reply: SandboxHTTPReply, on channel: any Channel, close: Bool) {
        let body = channel.allocator.buffer(string: reply.body)
        var headers = HTTPHeaders()
        if reply.headers["content-type"] == nil { headers.add(name: "content-type", value: "application/json; charset=UTF-8") }
        headers.add(name: "content-length", value: String(body.readableBytes))
        for (name, value) in reply.headers.sorted(by: { $0.key < $1.key }) { headers.add(name: name, value: value) }
        if close { headers.add(name: "connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: reply.status), headers: headers)
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        // An empty body part would be an empty DATA frame without END_STREAM; a client counts those as
        // a denial-of-service pattern when answers to many streams interleave (NIOHTTP2's DOSHeuristics).
        if body.readableBytes > 0 { channel.write(HTTPServerResponsePart.body(.byteBuffer(body)), promise: nil) }
        let written = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        if close { written.whenComplete { _ in channel.close(promise: nil) } }
    }
}
