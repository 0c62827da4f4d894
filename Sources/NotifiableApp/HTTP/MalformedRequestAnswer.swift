import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// A request the HTTP parser cannot read (a header over 80 KiB, a NUL or control byte in a
/// header, a broken request line) never reaches the router: the server answers 400 with an
/// empty body and closes the connection. This handler gives that answer CONTRACT §4's JSON
/// error body, and 431 when the headers were too large.
final class MalformedRequestAnswer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var parserError: HTTPParserError?
    private var pendingBody: ByteBuffer?

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? HTTPParserError { parserError = error }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var response) where parserError != nil && response.status == .badRequest:
            let tooLarge = parserError == .headerOverflow
            let body =
                tooLarge
                ? #"{"error":{"code":"headers_too_large","message":"The request's headers are larger than this server reads (80 KiB)."}}"#
                : #"{"error":{"code":"malformed_request","message":"The request is not valid HTTP/1.1 (a header holds a character HTTP does not allow, or the request line is broken)."}}"#
            var buffer = context.channel.allocator.buffer(capacity: body.utf8.count)
            buffer.writeString(body)
            response.status = tooLarge ? .requestHeaderFieldsTooLarge : .badRequest
            response.headerFields[.contentType] = "application/json; charset=utf-8"
            response.headerFields[.contentLength] = String(buffer.readableBytes)
            pendingBody = buffer
            context.write(wrapOutboundOut(.head(response)), promise: promise)
        case .end(let trailers) where pendingBody != nil:
            context.write(wrapOutboundOut(.body(pendingBody!)), promise: nil)
            pendingBody = nil
            context.write(wrapOutboundOut(.end(trailers)), promise: promise)
        default:
            context.write(data, promise: promise)
        }
    }
}
