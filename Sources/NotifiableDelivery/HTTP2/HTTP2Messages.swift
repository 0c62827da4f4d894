/// One POST as it goes on the wire: its `:path` on the client's endpoint, its headers
/// (authorization included) and its body.
public struct HTTP2Request: Sendable {
    public var path: String
    public var headers: [(String, String)]
    public var payload: [UInt8]

    public init(path: String, headers: [(String, String)], payload: [UInt8]) {
        self.path = path
        self.headers = headers
        self.payload = payload
    }
}

/// The answer to one request: its status, the two headers a sender acts on, and its body.
public struct HTTP2Response: Sendable, Equatable {
    public var status: Int
    /// `apns-id`: the identifier APNs gives the push (absent from other gateways' answers).
    public var apnsID: String?
    public var retryAfter: String?
    public var body: [UInt8]

    public init(status: Int, apnsID: String?, retryAfter: String?, body: [UInt8]) {
        self.status = status
        self.apnsID = apnsID
        self.retryAfter = retryAfter
        self.body = body
    }
}

/// Carries requests to one endpoint over long-lived HTTP/2 connections (HTTP2Client; tests put
/// their own in its place). Throws on transport failures (connection lost, deadline passed); any
/// HTTP answer is a response.
public protocol HTTP2Transport: Sendable {
    func send(_ request: HTTP2Request, deadline: Duration) async throws -> HTTP2Response
    func shutdown() async
}
