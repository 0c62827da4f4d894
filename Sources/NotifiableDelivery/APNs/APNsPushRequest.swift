extension HTTP2Request {
    /// One push as it goes on the wire to APNs: `POST /3/device/<token>` with these headers
    /// (authorization included) and this body.
    public static func apnsPush(deviceToken: String, headers: [(String, String)], payload: [UInt8]) -> HTTP2Request {
        HTTP2Request(path: "/3/device/" + deviceToken, headers: headers, payload: payload)
    }
}
