import Logging
import NIOCore
import NIOHTTP2

/// Serves one HTTP/2 stream (one push request): gathers HEADERS and DATA, asks the rules, writes the answer.
final class SandboxAPNsStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let rules: SandboxAPNsRules
    private let logger: Logger
    private var request = SandboxAPNsRequest()
    private var sawHeaders = false
    private var answered = false

    init(rules: SandboxAPNsRules, logger: Logger) {
        self.rules = rules
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if !sawHeaders {
                sawHeaders = true
                request.read(frame)
            }  // A second HEADERS frame carries trailers: APNs ignores them, and so do we.
            if frame.endStream { answer(context: context) }
        case .data(let frame):
            if case .byteBuffer(var buffer) = frame.data { request.append(body: &buffer) }
            if frame.endStream { answer(context: context) }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("fake APNs stream error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func answer(context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        request.connection = SandboxGatewayConnectionDropper.connectionNumber(of: context.channel)
        let decision = rules.decide(request)
        request = SandboxAPNsRequest()
        let channel = context.channel
        switch decision {
        case .dropConnection:
            logger.debug("fake APNs drops the connection")
            SandboxGatewayConnectionDropper.drop(connectionOf: channel)
        case .resetStream:
            logger.debug("fake APNs resets a stream")
            // Writing RST_STREAM closes the stream channel; the connection's other streams go on.
            channel.writeAndFlush(HTTP2Frame.FramePayload.rstStream(.internalError), promise: nil)
        case .noAnswer:
            logger.debug("fake APNs leaves a push unanswered")
        case .answer(let reply, let delay):
            if reply.status != 200 {
                logger.debug(
                    "fake APNs rejects a push",
                    metadata: ["status": "\(reply.status)", "reason": "\(reply.reason ?? "")"]
                )
            }
            if delay > .zero {
                channel.eventLoop.scheduleTask(in: TimeAmount(delay)) {
                    Self.write(reply, on: channel)
                }
            } else {
                Self.write(reply, on: channel)
            }
        }
    }

    private static func write(_ reply: SandboxAPNsReply, on channel: any Channel) {
        var headers = HTTP2Frame.FramePayload.Headers(headers: [":status": String(reply.status)])
        // Every answer has a new apns-id: keep it out of the HPACK dynamic table, where it would only evict others.
        headers.headers.add(name: "apns-id", value: reply.apnsID, indexing: .nonIndexable)
        if let retryAfter = reply.retryAfterSeconds {
            headers.headers.add(name: "retry-after", value: String(retryAfter))
        }
        if let channelID = reply.channelID {
            headers.headers.add(name: "apns-channel-id", value: channelID)
        }
        guard let body = reply.body else {
            headers.endStream = true
            channel.writeAndFlush(HTTP2Frame.FramePayload.headers(headers), promise: nil)
            return
        }
        let buffer = channel.allocator.buffer(string: body)
        headers.headers.add(name: "content-type", value: "application/json")
        headers.headers.add(name: "content-length", value: String(buffer.readableBytes))
        channel.write(HTTP2Frame.FramePayload.headers(headers), promise: nil)
        channel.writeAndFlush(
            HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(buffer), endStream: true)),
            promise: nil
        )
    }
}
