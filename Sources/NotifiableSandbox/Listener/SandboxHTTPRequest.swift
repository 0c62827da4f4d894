import NIOCore
import NIOHTTP1

/// The parts of an HTTP request a fake gateway (FCM, Web Push) looks at, gathered by the request handler
/// (the same for HTTP/1.1 and for an HTTP/2 stream, which NIO turns into HTTP/1-style parts).
struct SandboxHTTPRequest {
    var method: String
    /// The path without its query.
    var path: String
    /// Header names lower-case, in the order received (names repeat for repeated headers).
    var headers: [(name: String, value: String)]
    var body: ByteBuffer?
    var bodyLength = 0
    /// ``SandboxGatewayRequestRecord/connection``.
    var connection = 0

    /// Bodies are kept up to this size, plus one byte to tell that it was larger.
    static let maxBodyBytes = 64 * 1024

    init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.headers = headers
        var buffer = ByteBuffer(bytes: body)
        append(body: &buffer)
    }

    init(head: HTTPRequestHead) {
        let uri = head.uri
        self.init(
            method: head.method.rawValue,
            path: uri.firstIndex(of: "?").map { String(uri[..<$0]) } ?? uri,
            headers: head.headers.map { (name: $0.name.lowercased(), value: $0.value) }
        )
    }

    /// The last value of a header (names lower-case).
    func header(_ name: String) -> String? {
        headers.last { $0.name == name }?.value
    }

    /// Adds body bytes, keeping no more than one byte past the limit.
    mutating func append(body buffer: inout ByteBuffer) {
        guard buffer.readableBytes > 0 else { return }
        bodyLength += buffer.readableBytes
        guard bodyLength <= Self.maxBodyBytes + 1 else { return }
        if body == nil {
            body = buffer
        } else {
            body!.writeBuffer(&buffer)
        }
    }

    var bodyBytes: [UInt8] {
        body.map { Array($0.readableBytesView) } ?? []
    }

    var isBodyTooLarge: Bool { bodyLength > Self.maxBodyBytes }

    /// Headers as recorded with an accepted message: lower-case names, the last value winning.
    var headerDictionary: [String: String] {
        var dictionary: [String: String] = [:]
        for (name, value) in headers where !name.hasPrefix(":") { dictionary[name] = value }
        return dictionary
    }
}

/// An answer to write: a status, extra headers, and a JSON body.
struct SandboxHTTPReply: Sendable, Equatable {
    var status: Int
    var body: String
    var headers: [String: String] = [:]

    /// 200 with a JSON body.
    static func ok(_ body: String) -> SandboxHTTPReply {
        SandboxHTTPReply(status: 200, body: body)
    }
}

enum SandboxHTTPDecision: Sendable, Equatable {
    case answer(SandboxHTTPReply, after: Duration)
    case dropConnection
    case resetStream
    case noAnswer
}
