import Foundation
import NotifiableCore

/// Maps an APNs answer (or a transport failure) onto a `DeliveryOutcome`.
public enum APNsResponseClassifier {
    /// The error body of an APNs response: `{"reason": "…", "timestamp": <ms since 1970>}`.
    public struct ErrorBody: Sendable, Equatable {
        public var reason: APNsReason?
        /// For 410 responses: when APNs last confirmed the token was no longer valid.
        public var timestamp: Date?

        public init(reason: APNsReason? = nil, timestamp: Date? = nil) {
            self.reason = reason
            self.timestamp = timestamp
        }

        /// Parses a body; anything unparseable (empty, not JSON, wrong types) gives empty fields.
        public init(parsing body: [UInt8]) {
            guard !body.isEmpty, let object = (try? JSONValue.decode(body))?.objectValue else { return }
            if case .string(let reason)? = object["reason"], !reason.isEmpty {
                self.reason = APNsReason(reason)
            }
            let milliseconds: Double? =
                switch object["timestamp"] {
                case .integer(let value)?: Double(value)
                case .number(let value)? where value.isFinite: value
                case .string(let text)?: Double(text).flatMap { $0.isFinite ? $0 : nil }
                default: nil
                }
            if let milliseconds, milliseconds > 0 {
                self.timestamp = Date(timeIntervalSince1970: milliseconds / 1000)
            }
        }
    }

    /// Classifies an APNs HTTP response.
    ///
    /// - 2xx → `.sent(gatewayID: apnsID)`.
    /// - 410 (`Unregistered`, `ExpiredToken`) → `.tokenDead(at: timestamp)`.
    /// - 429 and any 5xx → `.retry`, with `Retry-After` (delta-seconds) when given.
    /// - `BadDeviceToken`, `DeviceTokenNotForTopic` → `.tokenDead(at: nil)`.
    /// - `ExpiredProviderToken` → `.refreshCredentialsAndRetry`.
    /// - Credential, certificate, topic and environment errors, and any other 403 →
    ///   `.misconfigured`.
    /// - `IdleTimeout`, `Shutdown`, `ServiceUnavailable`, `InternalServerError`, `TooMany…` under
    ///   another status → `.retry`.
    /// - Other 4xx (`PayloadTooLarge`, `BadPriority`, …) → `.failed`.
    /// - Anything else (1xx, 3xx, nonsense) → `.retry`.
    ///
    /// The outcome's reason is APNs' reason string, or `HTTP <status>` when the body has none.
    public static func classify(status: Int, body: [UInt8], retryAfter: String?, apnsID: String? = nil) -> DeliveryOutcome {
        if (200..<300).contains(status) { return .sent(gatewayID: apnsID) }
        let parsed = ErrorBody(parsing: body)
        let reason = parsed.reason?.rawValue ?? "HTTP \(status)"
        let delay = parseRetryAfter(retryAfter)

        if status == 410 { return .tokenDead(reason: reason, at: parsed.timestamp) }
        if status == 429 || (500..<600).contains(status) { return .retry(reason: reason, retryAfter: delay) }

        switch parsed.reason {
        case .badDeviceToken?, .deviceTokenNotForTopic?:
            return .tokenDead(reason: reason, at: nil)
        case .unregistered?, .expiredToken?:
            return .tokenDead(reason: reason, at: parsed.timestamp)
        case .expiredProviderToken?:
            return .refreshCredentialsAndRetry(reason: reason)
        case .invalidProviderToken?, .missingProviderToken?, .badCertificate?, .badCertificateEnvironment?,
            .unrelatedKeyIdInToken?, .badEnvironmentKeyInToken?, .forbidden?, .badTopic?, .topicDisallowed?,
            .missingTopic?:
            return .misconfigured(reason: reason)
        case .idleTimeout?, .shutdown?, .serviceUnavailable?, .internalServerError?, .tooManyRequests?,
            .tooManyProviderTokenUpdates?:
            return .retry(reason: reason, retryAfter: delay)
        default:
            break
        }
        if status == 403 { return .misconfigured(reason: reason) }
        if (400..<500).contains(status) { return .failed(reason: reason) }
        return .retry(reason: "unexpected HTTP status \(status)" + (parsed.reason.map { " \($0)" } ?? ""), retryAfter: delay)
    }

    /// A `Retry-After` value in delta-seconds ("120", "1.5"); nil when absent, negative or not a
    /// number (HTTP-date forms are not used by APNs and are ignored).
    public static func parseRetryAfter(_ value: String?) -> Duration? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty,
            let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds < 1e9
        else { return nil }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    /// Classifies a failure to get any answer (timeout, connection refused or lost, TLS): tried
    /// again, as `.outcomeUnknown` when the push may have reached APNs, with a short reason.
    public static func classify(transportError error: any Error) -> DeliveryOutcome {
        TransportFailure.mayHaveReachedGateway(error)
            ? .outcomeUnknown(reason: transportReason(error)) : .retry(reason: transportReason(error), retryAfter: nil)
    }

    static func transportReason(_ error: any Error) -> String {
        if let error = error as? HTTP2ClientError {
            switch error {
            case .deadlineExceeded: return "request deadline exceeded"
            case .notSent(let detail): return "not sent: \(detail)"
            case .connectTimeout: return "connect timeout"
            case .connectionClosed: return "connection closed"
            case .shutDown: return "APNs client shut down"
            default: return TransportFailure.short(error.description)
            }
        }
        return TransportFailure.reason(error, peer: "APNs")
    }
}
