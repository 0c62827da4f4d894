import AsyncHTTPClient
import Foundation
import NIOCore
import NotifiableCore
import Testing

@testable import NotifiableDelivery

struct FCMClassifierCase: Sendable, CustomTestStringConvertible {
    let response: GatewayResponse
    let expected: DeliveryOutcome

    init(_ status: Int, _ googleStatus: String, _ errorCode: String?, _ message: String, _ expected: DeliveryOutcome) {
        self.response = .fcmError(status, googleStatus, errorCode: errorCode, message: message)
        self.expected = expected
    }

    init(_ status: Int, body: String, _ expected: DeliveryOutcome) {
        self.response = .json(status, body)
        self.expected = expected
    }

    var testDescription: String { "\(response.status) \(String(decoding: response.body.prefix(80), as: UTF8.self))" }
}

@Suite struct FCMResponseClassifierTests {
    static let notFound = "Requested entity was not found."
    static let badToken = "The registration token is not a valid FCM registration token"

    static let cases: [FCMClassifierCase] = [
        // Accepted.
        .init(
            200, body: #"{"name":"projects/p/messages/0:1500415314455276%31bd1c9631bd1c96"}"#,
            .sent(gatewayID: "projects/p/messages/0:1500415314455276%31bd1c9631bd1c96")),
        .init(200, body: "{\n  \"name\": \"projects/p/messages/0:1\"\n}\n", .sent(gatewayID: "projects/p/messages/0:1")),
        // Bodies of another shape than FCM's own go through the JSON decoder.
        .init(200, body: #"{"name":"projects\/p\/messages\/\u0032"}"#, .sent(gatewayID: "projects/p/messages/2")),
        .init(200, body: #"{"extra": [1, {"name": "inner"}], "name": "projects/p/messages/3"}"#, .sent(gatewayID: "projects/p/messages/3")),
        .init(200, body: #"{"name": "projects/p/messages/4", "name2": "x"}"#, .sent(gatewayID: "projects/p/messages/4")),
        .init(200, body: #"{"name": "projects/p/messages/5"} trailing"#, .sent(gatewayID: nil)),
        .init(200, body: #"{"name": ""}"#, .sent(gatewayID: nil)),
        .init(200, body: #"{"name": 7}"#, .sent(gatewayID: nil)),
        .init(200, body: "", .sent(gatewayID: nil)),
        .init(200, body: "not json", .sent(gatewayID: nil)),
        // Dead tokens.
        .init(404, "NOT_FOUND", "UNREGISTERED", notFound, .tokenDead(reason: "UNREGISTERED: \(notFound)", at: nil)),
        .init(
            403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch",
            .tokenDead(reason: "SENDER_ID_MISMATCH: SenderId mismatch", at: nil)),
        .init(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", badToken, .tokenDead(reason: "INVALID_ARGUMENT: \(badToken)", at: nil)),
        .init(400, "INVALID_ARGUMENT", nil, badToken, .tokenDead(reason: "INVALID_ARGUMENT: \(badToken)", at: nil)),
        // The message is wrong, not the token.
        .init(
            400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid value at 'message.data[0].value' (TYPE_STRING), 12",
            .failed(reason: "INVALID_ARGUMENT: Invalid value at 'message.data[0].value' (TYPE_STRING), 12")),
        .init(400, "FAILED_PRECONDITION", nil, "Something else", .failed(reason: "FAILED_PRECONDITION: Something else")),
        .init(400, body: "", .failed(reason: "HTTP 400")),
        .init(413, body: "<html>too large</html>", .failed(reason: "HTTP 413")),
        // Transient.
        .init(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota exceeded", .retry(reason: "QUOTA_EXCEEDED: Quota exceeded", retryAfter: nil)),
        .init(429, "RESOURCE_EXHAUSTED", nil, "Quota exceeded", .retry(reason: "RESOURCE_EXHAUSTED: Quota exceeded", retryAfter: nil)),
        .init(503, "UNAVAILABLE", "UNAVAILABLE", "The service is unavailable", .retry(reason: "UNAVAILABLE: The service is unavailable", retryAfter: nil)),
        .init(500, "INTERNAL", "INTERNAL", "Internal error", .retry(reason: "INTERNAL: Internal error", retryAfter: nil)),
        .init(502, body: "<html>Bad Gateway</html>", .retry(reason: "HTTP 502", retryAfter: nil)),
        .init(504, body: "", .retry(reason: "HTTP 504", retryAfter: nil)),
        .init(408, body: "", .retry(reason: "HTTP 408", retryAfter: nil)),
        .init(302, body: "", .retry(reason: "unexpected HTTP status 302", retryAfter: nil)),
        // Credentials.
        .init(
            401, "UNAUTHENTICATED", nil, "Request had invalid authentication credentials.",
            .refreshCredentialsAndRetry(reason: "UNAUTHENTICATED: Request had invalid authentication credentials.")),
        .init(401, body: "", .refreshCredentialsAndRetry(reason: "HTTP 401")),
        // The app's settings are wrong.
        .init(
            401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR", "Auth error from APNS or Web Push Service",
            .misconfigured(reason: "THIRD_PARTY_AUTH_ERROR: Auth error from APNS or Web Push Service")),
        .init(
            403, "PERMISSION_DENIED", nil, "Permission 'cloudmessaging.messages.create' denied",
            .misconfigured(
                reason:
                    "PERMISSION_DENIED: Permission 'cloudmessaging.messages.create' denied: check that the service account may send messages for this project")),
        .init(
            404, "NOT_FOUND", nil, notFound,
            .misconfigured(reason: "NOT_FOUND: \(notFound): check the app's FCM project id and endpoint")),
        .init(
            404, body: "<html>Not Found</html>",
            .misconfigured(reason: "HTTP 404: check the app's FCM project id and endpoint")),
        // Codes this code does not know are read by their HTTP status.
        .init(400, "INVALID_ARGUMENT", "SOMETHING_NEW", "New", .failed(reason: "SOMETHING_NEW: New")),
        .init(503, "UNAVAILABLE", "SOMETHING_NEW", "New", .retry(reason: "SOMETHING_NEW: New", retryAfter: nil)),
    ]

    @Test(arguments: cases)
    func classifies(_ example: FCMClassifierCase) {
        let outcome = FCMResponseClassifier.classify(
            status: example.response.status, body: example.response.body, retryAfter: nil
        )
        #expect(outcome == example.expected)
    }

    @Test func fieldViolationsNamingTheTokenMakeItDead() {
        let body = #"""
            {"error": {"code": 400, "message": "Invalid value", "status": "INVALID_ARGUMENT", "details": [
              {"@type": "type.googleapis.com/google.rpc.BadRequest",
               "fieldViolations": [{"field": "message.token", "description": "Invalid registration"}]}]}}
            """#
        let outcome = FCMResponseClassifier.classify(status: 400, body: Array(body.utf8), retryAfter: nil)
        #expect(outcome == .tokenDead(reason: "INVALID_ARGUMENT: Invalid value", at: nil))
        let parsed = FCMResponseClassifier.ErrorBody(parsing: Array(body.utf8))
        #expect(parsed == .init(status: "INVALID_ARGUMENT", message: "Invalid value", fieldViolations: ["message.token: Invalid registration"]))
    }

    @Test func retryAfterIsHonouredInSecondsOrAsADate() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let quota = GatewayResponse.fcmError(429, "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED", message: "q")
        func delay(_ header: String?) -> Duration? {
            guard case .retry(_, let after) = FCMResponseClassifier.classify(status: 429, body: quota.body, retryAfter: header, now: now)
            else { return .seconds(-1) }
            return after
        }
        #expect(delay("30") == .seconds(30))
        #expect(delay(" 2.5 ") == .milliseconds(2500))
        #expect(delay(HTTPDate.format(1_800_000_090)) == .seconds(90))
        #expect(delay(HTTPDate.format(1_799_999_000)) == .seconds(0))
        #expect(delay("-5") == nil)
        #expect(delay("soon") == nil)
        #expect(delay(nil) == nil)
        // 5xx keep it too.
        guard case .retry(_, let after) = FCMResponseClassifier.classify(status: 503, body: [], retryAfter: "7", now: now) else {
            Issue.record("503 not retried")
            return
        }
        #expect(after == .seconds(7))
    }

    @Test(arguments: [
        "", "null", "[]", #"{"error": "a string"}"#, #"{"error": {"code": "x", "status": 5, "details": "no"}}"#,
        #"{"error": {"details": [1, "two", null, {"@type": 3, "errorCode": ["UNREGISTERED"]}, {"fieldViolations": [7]}]}}"#,
        "\u{FF}\u{FE}",
    ])
    func oddBodiesDoNotBreakDecoding(_ body: String) {
        #expect(FCMResponseClassifier.ErrorBody(parsing: Array(body.utf8)) == .init())
        #expect(FCMResponseClassifier.classify(status: 400, body: Array(body.utf8), retryAfter: nil) == .failed(reason: "HTTP 400"))
    }

    @Test func theFcmErrorDetailIsPreferredAndLongMessagesAreCut() {
        let body = #"""
            {"error": {"code": 404, "message": "\#(String(repeating: "m", count: 500))", "status": "NOT_FOUND", "details": [
              {"@type": "type.googleapis.com/google.firebase.fcm.v1.ApnsError", "statusCode": 410},
              {"@type": "type.googleapis.com/google.rpc.Other", "errorCode": "OTHER"},
              {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}}
            """#
        guard case .tokenDead(let reason, nil) = FCMResponseClassifier.classify(status: 404, body: Array(body.utf8), retryAfter: nil) else {
            Issue.record("not a dead token")
            return
        }
        #expect(reason.hasPrefix("UNREGISTERED: mmm"))
        #expect(reason.count == "UNREGISTERED: ".count + 118)
    }

    /// Tried again; of unknown outcome unless the failure proves the message never left.
    @Test func transportFailuresAreRetried() {
        #expect(
            FCMResponseClassifier.classify(transportError: HTTPClientError.remoteConnectionClosed)
                == .outcomeUnknown(reason: "connection closed by FCM"))
        #expect(
            FCMResponseClassifier.classify(transportError: HTTPClientError.deadlineExceeded)
                == .outcomeUnknown(reason: "request deadline exceeded"))
        // Sends go over the HTTP/2 client APNs uses; its failures do not speak of APNs.
        #expect(
            FCMResponseClassifier.classify(transportError: HTTP2ClientError.deadlineExceeded)
                == .outcomeUnknown(reason: "request deadline exceeded"))
        #expect(
            FCMResponseClassifier.classify(transportError: HTTP2ClientError.connectionClosed("eof"))
                == .outcomeUnknown(reason: "connection closed by FCM"))
        #expect(
            FCMResponseClassifier.classify(transportError: HTTP2ClientError.notSent("connection closed before the push was sent"))
                == .retry(reason: "not sent: connection closed before the push was sent", retryAfter: nil))
        #expect(
            FCMResponseClassifier.classify(transportError: ChannelError.connectTimeout(.seconds(10)))
                == .retry(reason: "connect timeout", retryAfter: nil))
        #expect(
            FCMResponseClassifier.classify(transportError: CancellationError())
                == .outcomeUnknown(reason: "request cancelled"))
    }
}
