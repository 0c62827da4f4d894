import AsyncHTTPClient
import NIOCore
import NIOSSL

/// Short words for a failure to get any HTTP answer from a gateway (timeout, connection refused or lost,
/// TLS), for delivery reasons and logs.
public enum TransportFailure {
    /// `peer` names the other side ("APNs", "FCM") where the words say who closed a connection.
    public static func reason(_ error: any Error, peer: String) -> String {
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return "connect timeout"
            case .readTimeout: return "read timeout"
            case .writeTimeout: return "write timeout"
            case .tlsHandshakeTimeout: return "TLS handshake timeout"
            case .deadlineExceeded: return "request deadline exceeded"
            case .getConnectionFromPoolTimeout: return "timed out waiting for a connection"
            case .remoteConnectionClosed: return "connection closed by \(peer)"
            case .cancelled: return "request cancelled"
            case .alreadyShutdown: return "HTTP client shut down"
            default: return "HTTP client error: \(short(String(describing: error)))"
            }
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return "connect timeout"
            case .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed, .eof: return "connection closed"
            default: return "channel error: \(short(String(describing: error)))"
            }
        }
        // FCM goes over the HTTP/2 client APNs uses; its errors name APNs, so they are reworded here.
        if let error = error as? HTTP2ClientError {
            switch error {
            case .deadlineExceeded: return "request deadline exceeded"
            case .notSent(let detail): return "not sent: \(short(detail))"
            case .connectTimeout: return "connect timeout"
            case .connectionClosed: return "connection closed by \(peer)"
            case .shutDown: return "HTTP client shut down"
            case .streamReset(let detail): return "stream reset (\(short(detail)))"
            case .http2NotNegotiated: return "\(peer) did not negotiate HTTP/2"
            case .responseTooLarge: return "answer body over 64 KiB"
            case .malformedResponse: return "answer without :status"
            case .invalidHeader(let name): return "request header \"\(short(name))\" cannot be sent over HTTP/2"
            case .invalidBaseURL(let url): return "invalid URL \(short(url))"
            }
        }
        if error is NIOSSLError || error is BoringSSLError { return "TLS error: \(short(String(describing: error)))" }
        if let error = error as? IOError { return "I/O error: \(short(error.description))" }
        if error is CancellationError { return "request cancelled" }
        return "transport error: \(short(String(describing: error)))"
    }

    /// Whether a request that failed with `error` may have reached the gateway, so that it may
    /// have taken the push although no answer said so. Only failures that prove the request never
    /// left (never written, no connection set up, refused before sending) are known not to have;
    /// any other is counted as an attempt of unknown outcome.
    public static func mayHaveReachedGateway(_ error: any Error) -> Bool {
        if let error = error as? HTTP2ClientError {
            switch error {
            case .notSent, .connectTimeout, .http2NotNegotiated, .invalidBaseURL, .invalidHeader, .shutDown: return false
            case .deadlineExceeded, .connectionClosed, .streamReset, .responseTooLarge, .malformedResponse: return true
            }
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout, .alreadyShutdown, .invalidURL: return false
            default: return true
            }
        }
        if let error = error as? ChannelError, case .connectTimeout = error { return false }
        if error is NIOSSLError || error is BoringSSLError { return false }
        return true
    }

    /// At most 120 characters.
    static func short(_ text: String) -> String {
        text.count <= 120 ? text : String(text.prefix(117)) + "…"
    }
}
