import Foundation

/// What the fake APNs gateway does with a request that passed validation.
public enum SandboxAPNsOutcome: Sendable, Hashable {
    /// Answer 200 and record the push.
    case accept
    /// Answer `status` with the JSON body `{"reason": reason}`; `timestamp` adds `"timestamp"` (ms since 1970, as APNs does
    /// for 410 `Unregistered`) and `retryAfterSeconds` adds a `retry-after` header. The push is not recorded.
    case reject(status: Int, reason: String, timestamp: Date? = nil, retryAfterSeconds: Int? = nil)
    /// Wait, then accept (and record the push when the decision is made, before the wait).
    case delay(Duration)
    /// Close the whole TCP connection without answering, as a crashed or restarted APNs node would.
    case dropConnection
    /// Reset the request's stream (RST_STREAM `INTERNAL_ERROR`) without answering; the connection lives on.
    case resetStream
    /// Never answer: the stream stays open until the client resets it or goes away.
    case noAnswer

    /// 410 `Unregistered`: the token is no longer active for the topic since `date`.
    public static func unregistered(since date: Date) -> SandboxAPNsOutcome {
        .reject(status: 410, reason: "Unregistered", timestamp: date)
    }

    /// 400 `BadDeviceToken`.
    public static let badDeviceToken = SandboxAPNsOutcome.reject(status: 400, reason: "BadDeviceToken")

    /// 429 `TooManyRequests`, optionally with `retry-after`.
    public static func tooManyRequests(retryAfterSeconds: Int? = nil) -> SandboxAPNsOutcome {
        .reject(status: 429, reason: "TooManyRequests", retryAfterSeconds: retryAfterSeconds)
    }

    /// 503 `ServiceUnavailable`.
    public static let serviceUnavailable = SandboxAPNsOutcome.reject(status: 503, reason: "ServiceUnavailable")

    /// 500 `InternalServerError`.
    public static let internalServerError = SandboxAPNsOutcome.reject(status: 500, reason: "InternalServerError")

    /// How APNs shows `fault` to a request arriving at `now`.
    static func injecting(_ fault: SandboxGatewayFault, now: Date) -> SandboxAPNsOutcome {
        switch fault {
        case .unavailable(let retryAfterSeconds):
            .reject(status: 503, reason: "ServiceUnavailable", retryAfterSeconds: retryAfterSeconds)
        case .resetStream: .resetStream
        case .dropConnection: .dropConnection
        case .unregistered: .unregistered(since: now)
        case .timeout: .noAnswer
        }
    }
}

/// A push the fake APNs gateway answered 200 to.
public struct AcceptedPush: Sendable, Hashable {
    /// The device token from the path, lower-cased.
    public var token: String
    /// Request headers without the HTTP/2 pseudo-headers, names lower-case (the last value wins for repeated names).
    public var headers: [String: String]
    /// The raw JSON body.
    public var payload: [UInt8]
    /// The `apns-id` answered (the request's, or a new UUID).
    public var apnsID: String
    public var receivedAt: Date

    public init(token: String, headers: [String: String], payload: [UInt8], apnsID: String, receivedAt: Date) {
        self.token = token
        self.headers = headers
        self.payload = payload
        self.apnsID = apnsID
        self.receivedAt = receivedAt
    }

    /// The payload as text.
    public var payloadString: String { String(decoding: payload, as: UTF8.self) }
}
