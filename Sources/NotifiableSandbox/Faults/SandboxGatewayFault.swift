/// A failure a fake gateway injects into a valid request, as the real gateways fail under load or in an outage.
/// Each gateway answers it in its own protocol (APNs: 503 `ServiceUnavailable`, 410 `Unregistered`; FCM: 503
/// `UNAVAILABLE`, 404 `UNREGISTERED`).
public enum SandboxGatewayFault: Sendable, Hashable, CustomStringConvertible {
    /// 503, with a `retry-after` header when `retryAfterSeconds` is given.
    case unavailable(retryAfterSeconds: Int?)
    /// RST_STREAM (`INTERNAL_ERROR`) on the request's HTTP/2 stream; the connection and its other streams live on.
    case resetStream
    /// The whole TCP connection closes without an answer (no GOAWAY, no TLS close_notify), failing every request
    /// in flight on it.
    case dropConnection
    /// The token is dead: APNs 410 `Unregistered` (timestamped now), FCM 404 `UNREGISTERED`.
    case unregistered
    /// No answer at all: the stream stays open until the client gives up on it.
    case timeout

    /// Reads a fault's name: `unavailable`, `unavailable:SECONDS` (with `retry-after`), `reset-stream`,
    /// `drop-connection`, `unregistered` or `timeout`.
    public init?(name: String) {
        switch name {
        case "unavailable": self = .unavailable(retryAfterSeconds: nil)
        case "reset-stream": self = .resetStream
        case "drop-connection": self = .dropConnection
        case "unregistered": self = .unregistered
        case "timeout": self = .timeout
        default:
            let prefix = "unavailable:"
            guard name.hasPrefix(prefix), let seconds = Int(name.dropFirst(prefix.count)), seconds >= 0 else { return nil }
            self = .unavailable(retryAfterSeconds: seconds)
        }
    }

    /// The name ``init(name:)`` reads; it is also the outcome a gateway's statistics count the fault under.
    public var description: String {
        switch self {
        case .unavailable(nil): "unavailable"
        case .unavailable(let seconds?): "unavailable:\(seconds)"
        case .resetStream: "reset-stream"
        case .dropConnection: "drop-connection"
        case .unregistered: "unregistered"
        case .timeout: "timeout"
        }
    }
}
