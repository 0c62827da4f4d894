/// What the fake push service does with a request that passed its checks.
public enum SandboxWebPushOutcome: Sendable, Hashable {
    /// 201 Created with a `Location` naming the message; it is recorded.
    case accept
    /// Answer `status` with `body` (and `Retry-After` when given); nothing is recorded.
    case reject(status: Int, body: String, retryAfterSeconds: Int? = nil)

    /// 410 Gone: the browser unsubscribed or the subscription expired (Mozilla's and Apple's answer; RFC 8030 §7.3 says 404).
    public static let gone = SandboxWebPushOutcome.reject(status: 410, body: "push subscription has unsubscribed or expired")
    /// 429 with `Retry-After` (RFC 8030 §8.4).
    public static func tooManyRequests(retryAfterSeconds: Int) -> SandboxWebPushOutcome {
        .reject(status: 429, body: "too many requests", retryAfterSeconds: retryAfterSeconds)
    }
    /// 503: the push service is unavailable for now.
    public static let unavailable = SandboxWebPushOutcome.reject(status: 503, body: "service unavailable", retryAfterSeconds: 1)
}

/// A message the fake push service accepted: what arrived, and what it said once decrypted (when the
/// gateway made the subscription, and so holds its private key).
public struct AcceptedWebPushMessage: Sendable {
    /// The path's last part: the subscription's id.
    public let subscription: String
    /// `Location` of the answer: the message's id.
    public let location: String
    /// Header names lower-case.
    public let headers: [String: String]
    /// The encrypted body as sent.
    public let body: [UInt8]
    /// The decrypted message; nil for a subscription the gateway did not make.
    public let plaintext: String?
}
