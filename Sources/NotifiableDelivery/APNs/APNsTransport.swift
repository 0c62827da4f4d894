/// One push as it goes on the wire to APNs: `POST /3/device/<token>` with these headers
/// (authorization included) and this body.
public struct APNsWireRequest: Sendable {
    public var deviceToken: String
    public var headers: [(String, String)]
    public var payload: [UInt8]
    /// The request's `:path`: `/3/device/<token>` for a push. FCM's sends, which go over the same
    /// HTTP/2 client, set their own.
    public var path: String

    public init(deviceToken: String, headers: [(String, String)], payload: [UInt8]) {
        self.deviceToken = deviceToken
        self.headers = headers
        self.payload = payload
        self.path = "/3/device/" + deviceToken
    }

    /// A POST of `payload` to `path` on the client's endpoint.
    public init(path: String, headers: [(String, String)], payload: [UInt8]) {
        self.deviceToken = ""
        self.headers = headers
        self.payload = payload
        self.path = path
    }
}

/// APNs' answer to one push.
public struct APNsWireResponse: Sendable, Equatable {
    public var status: Int
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

/// Carries pushes to one APNs endpoint over long-lived HTTP/2 connections. Throws on transport
/// failures (connection lost, deadline passed); any HTTP answer is a response.
public protocol APNsTransport: Sendable {
    func send(_ request: APNsWireRequest, deadline: Duration) async throws -> APNsWireResponse
    func shutdown() async
}
