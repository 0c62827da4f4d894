import Foundation
import NotifiableCore

/// Maps an FCM HTTP v1 answer (or a transport failure) onto a `DeliveryOutcome`.
public enum FCMResponseClassifier {
    /// The error body of an FCM response, a Google API error:
    /// `{"error": {"code": 404, "message": "…", "status": "NOT_FOUND", "details": [{"@type":
    /// "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}, {"@type":
    /// "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{"field": …, "description": …}]}]}}`.
    public struct ErrorBody: Sendable, Equatable {
        /// `error.status`, the Google API status (`NOT_FOUND`, `INVALID_ARGUMENT`, …).
        public var status: String?
        /// The FCM error code of the `FcmError` detail (`UNREGISTERED`, `SENDER_ID_MISMATCH`, …).
        public var errorCode: String?
        public var message: String?
        /// `field: description` of each field violation of a `BadRequest` detail.
        public var fieldViolations: [String] = []

        public init(status: String? = nil, errorCode: String? = nil, message: String? = nil, fieldViolations: [String] = []) {
            self.status = status
            self.errorCode = errorCode
            self.message = message
            self.fieldViolations = fieldViolations
        }

        /// Parses a body; anything unparseable or unexpected (empty, not JSON, wrong types, unknown
        /// codes and detail types) leaves fields empty rather than failing.
        public init(parsing body: [UInt8]) {
            guard !body.isEmpty, let error = (try? JSONValue.decode(body))?.objectValue?["error"]?.objectValue else { return }
            status = Self.text(error["status"])
            message = Self.text(error["message"])
            guard case .array(let details)? = error["details"] else { return }
            for detail in details {
                guard let detail = detail.objectValue else { continue }
                if errorCode == nil || Self.text(detail["@type"])?.hasSuffix(".FcmError") == true,
                    let code = Self.text(detail["errorCode"])
                {
                    errorCode = code
                }
                if case .array(let violations)? = detail["fieldViolations"] {
                    for violation in violations.compactMap(\.objectValue) {
                        let field = Self.text(violation["field"]) ?? ""
                        let description = Self.text(violation["description"]) ?? ""
                        fieldViolations.append(description.isEmpty ? field : "\(field): \(description)")
                    }
                }
            }
        }

        /// The most specific code: the FCM error code, else the status.
        public var code: String? { errorCode ?? status }

        /// Whether the error is about the message's registration token (not its content).
        var namesRegistrationToken: Bool {
            ([message ?? ""] + fieldViolations).contains { text in
                let lower = text.lowercased()
                return lower.contains("registration token") || lower.contains("message.token")
            }
        }

        private static func text(_ value: JSONValue?) -> String? {
            guard case .string(let text)? = value, !text.isEmpty else { return nil }
            return text
        }
    }

    /// Classifies an FCM `messages:send` response.
    ///
    /// - 2xx → `.sent(gatewayID:)` with the message `name` (`projects/…/messages/…`).
    /// - `UNREGISTERED`, `SENDER_ID_MISMATCH`, and 400 `INVALID_ARGUMENT` about the registration token →
    ///   `.tokenDead`.
    /// - `THIRD_PARTY_AUTH_ERROR`, other 403 (`PERMISSION_DENIED`), and 404 without `UNREGISTERED` (the
    ///   project or endpoint does not exist) → `.misconfigured`.
    /// - Other 401 (`UNAUTHENTICATED`: the access token expired or was revoked) →
    ///   `.refreshCredentialsAndRetry`.
    /// - 408, 429 (`QUOTA_EXCEEDED`, `RESOURCE_EXHAUSTED`), `UNAVAILABLE`, `INTERNAL` and any 5xx →
    ///   `.retry`, no sooner than `Retry-After` (delta-seconds or an HTTP-date).
    /// - Other 4xx → `.failed` (the message is wrong; sending it again gives the same answer).
    /// - Anything else (1xx, 3xx) → `.retry`.
    ///
    /// Reasons start with the FCM code (`UNREGISTERED: Requested entity was not found.`), or
    /// `HTTP <status>` when the body has none.
    public static func classify(status: Int, body: [UInt8], retryAfter: String?, now: Date = Date()) -> DeliveryOutcome {
        if (200..<300).contains(status) {
            let name =
                plainMessageName(body)
                ?? {
                    guard case .string(let name)? = (try? JSONValue.decode(body))?.objectValue?["name"] else { return nil }
                    return name
                }()
            return .sent(gatewayID: name.flatMap { $0.isEmpty ? nil : $0 })
        }
        let error = ErrorBody(parsing: body)
        let code = error.code ?? "HTTP \(status)"
        let reason = error.message.map { "\(code): \(TransportFailure.short($0))" } ?? code
        let delay = RetryAfter.duration(retryAfter, now: now)

        switch error.errorCode {
        case "UNREGISTERED"?, "SENDER_ID_MISMATCH"?:
            return .tokenDead(reason: reason, at: nil)
        case "THIRD_PARTY_AUTH_ERROR"?, "APNS_AUTH_ERROR"?:
            return .misconfigured(reason: reason)
        case "QUOTA_EXCEEDED"?, "UNAVAILABLE"?, "INTERNAL"?:
            return .retry(reason: reason, retryAfter: delay)
        default:
            break
        }
        switch status {
        case 400 where error.code == "INVALID_ARGUMENT" && error.namesRegistrationToken:
            return .tokenDead(reason: reason, at: nil)
        case 401:
            return .refreshCredentialsAndRetry(reason: reason)
        case 403:
            return .misconfigured(reason: reason + ": check that the service account may send messages for this project")
        case 404:
            return .misconfigured(reason: reason + ": check the app's FCM project id and endpoint")
        case 408, 429, 500..<600:
            return .retry(reason: reason, retryAfter: delay)
        case 400..<500:
            return .failed(reason: reason)
        default:
            return .retry(reason: "unexpected HTTP status \(status)" + (error.code.map { " \($0)" } ?? ""), retryAfter: delay)
        }
    }

    /// The message name of a success body that is exactly `{"name": "<text without escapes>"}` (with any
    /// whitespace), as FCM answers every accepted message, read without a JSON decoder: decoding it cost a
    /// tenth of a sending worker's CPU. Nil for any other body, which the decoder then reads.
    static func plainMessageName(_ body: [UInt8]) -> String? {
        var index = 0
        func skipWhitespace() {
            while index < body.count, body[index] == 0x20 || body[index] == 0x0A || body[index] == 0x0D || body[index] == 0x09 { index += 1 }
        }
        func expect(_ text: StaticString) -> Bool {
            let bytes = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
            guard body.count - index >= bytes.count, body[index..<index + bytes.count].elementsEqual(bytes) else { return false }
            index += bytes.count
            return true
        }
        skipWhitespace()
        guard expect("{") else { return nil }
        skipWhitespace()
        guard expect("\"name\"") else { return nil }
        skipWhitespace()
        guard expect(":") else { return nil }
        skipWhitespace()
        guard expect("\"") else { return nil }
        let start = index
        while index < body.count, body[index] != UInt8(ascii: "\""), body[index] != UInt8(ascii: "\\"), body[index] >= 0x20 { index += 1 }
        let end = index
        guard expect("\"") else { return nil }
        skipWhitespace()
        guard expect("}") else { return nil }
        skipWhitespace()
        guard index == body.count else { return nil }
        return String(validating: body[start..<end], as: UTF8.self)
    }

    /// Classifies a failure to get any answer (timeout, connection refused or lost, TLS): tried
    /// again, as `.outcomeUnknown` when the push may have reached FCM, with a short reason.
    public static func classify(transportError error: any Error) -> DeliveryOutcome {
        let reason = TransportFailure.reason(error, peer: "FCM")
        return TransportFailure.mayHaveReachedGateway(error) ? .outcomeUnknown(reason: reason) : .retry(reason: reason, retryAfter: nil)
    }
}
