import NIOHPACK

/// One request as it goes on the wire: its method (a push is a POST), its `:path` on the
/// client's endpoint, its headers (authorization included) and its body.
public struct HTTP2Request: Sendable {
    public var method: String
    public var path: String
    public var headers: [(String, String)]
    public var payload: [UInt8]

    public init(method: String = "POST", path: String, headers: [(String, String)], payload: [UInt8]) {
        self.method = method
        self.path = path
        self.headers = headers
        self.payload = payload
    }
}

/// The answer to one request: its status, its headers as received (`:status` among them) and its
/// body. Each sender reads the headers its gateway defines (`apns-id`, `retry-after`).
public struct HTTP2Response: Sendable {
    public var status: Int
    public var headers: HPACKHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HPACKHeaders = [:], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of the header `name` (lower-case, as HTTP/2 sends names).
    public func header(_ name: String) -> String? {
        headers.first(name: name)
    }

    /// `retry-after`, which APNs and FCM both may send with 429 and 503.
    public var retryAfter: String? { header("retry-after") }
}

/// Carries requests to one endpoint over long-lived HTTP/2 connections (HTTP2Client; tests put
/// their own in its place). Throws on transport failures (connection lost, deadline passed); any
/// HTTP answer is a response.
public protocol HTTP2Transport: Sendable {
    func send(_ request: HTTP2Request, deadline: Duration) async throws -> HTTP2Response
    func shutdown() async
}
