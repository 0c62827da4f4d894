import Logging
import NIOCore

/// Sits below TLS and, when sent ``Drop``, closes the socket at once: no TLS close_notify and no HTTP/2 GOAWAY,
/// as when a node of the real service dies.
final class SandboxGatewayConnectionDropper: ChannelOutboundHandler, Sendable {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct Drop: Sendable {}

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if event is Drop {
            context.close(promise: promise)
        } else {
            context.triggerUserOutboundEvent(event, promise: promise)
        }
    }

    /// The TCP connection that `channel` (a connection, or an HTTP/2 stream of one) belongs to, as a number for the
    /// request log (``SandboxGatewayRequestRecord/connection``): its object identity, free to read on every request.
    static func connectionNumber(of channel: any Channel) -> Int {
        Int(bitPattern: ObjectIdentifier(channel.parent ?? channel))
    }

    /// Drops the TCP connection that `channel` (a connection, or an HTTP/2 stream of one) belongs to.
    static func drop(connectionOf channel: any Channel) {
        let connection = channel.parent ?? channel
        connection.triggerUserOutboundEvent(Drop(), promise: nil)
        connection.close(promise: nil)  // in case the dropper is not there
    }
}

/// Closes a connection whose TLS or HTTP/2 layer failed (a client that went away, a protocol error).
final class SandboxGatewayConnectionErrorHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = Never

    let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("fake gateway connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}
