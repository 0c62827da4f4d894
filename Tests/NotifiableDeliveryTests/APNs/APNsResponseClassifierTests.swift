import AsyncHTTPClient
import Foundation
import NIOCore
import NotifiableCore
import Testing

@testable import NotifiableDelivery

struct APNsClassifierCase: Sendable, CustomTestStringConvertible {
    let status: Int
    let reason: String?
    let expected: DeliveryOutcome

    init(_ status: Int, _ reason: String?, _ expected: DeliveryOutcome) {
        self.status = status
        self.reason = reason
        self.expected = expected
    }

    var body: [UInt8] { reason.map { Array(#"{"reason":"\#($0)"}"#.utf8) } ?? [] }
    var testDescription: String { "\(status) \(reason ?? "-")" }
}

@Suite struct APNsResponseClassifierTests {
    static let cases: [APNsClassifierCase] = [
        // Dead tokens.
        .init(410, "Unregistered", .tokenDead(reason: "Unregistered", at: nil)),
        .init(410, "ExpiredToken", .tokenDead(reason: "ExpiredToken", at: nil)),
        .init(410, nil, .tokenDead(reason: "HTTP 410", at: nil)),
        .init(400, "BadDeviceToken", .tokenDead(reason: "BadDeviceToken", at: nil)),
        .init(400, "DeviceTokenNotForTopic", .tokenDead(reason: "DeviceTokenNotForTopic", at: nil)),
        // Credentials to refresh.
        .init(403, "ExpiredProviderToken", .refreshCredentialsAndRetry(reason: "ExpiredProviderToken")),
        // The app's settings are wrong.
        .init(403, "InvalidProviderToken", .misconfigured(reason: "InvalidProviderToken")),
        .init(403, "MissingProviderToken", .misconfigured(reason: "MissingProviderToken")),
        .init(403, "BadCertificate", .misconfigured(reason: "BadCertificate")),
        .init(403, "BadCertificateEnvironment", .misconfigured(reason: "BadCertificateEnvironment")),
        .init(403, "UnrelatedKeyIdInToken", .misconfigured(reason: "UnrelatedKeyIdInToken")),
        .init(403, "BadEnvironmentKeyInToken", .misconfigured(reason: "BadEnvironmentKeyInToken")),
        .init(403, "Forbidden", .misconfigured(reason: "Forbidden")),
        .init(403, "SomethingNew", .misconfigured(reason: "SomethingNew")),
        .init(403, nil, .misconfigured(reason: "HTTP 403")),
        .init(400, "BadTopic", .misconfigured(reason: "BadTopic")),
        .init(400, "TopicDisallowed", .misconfigured(reason: "TopicDisallowed")),
        .init(400, "MissingTopic", .misconfigured(reason: "MissingTopic")),
        // Transient.
        .init(429, "TooManyRequests", .retry(reason: "TooManyRequests", retryAfter: nil)),
        .init(429, "TooManyProviderTokenUpdates", .retry(reason: "TooManyProviderTokenUpdates", retryAfter: nil)),
        .init(429, nil, .retry(reason: "HTTP 429", retryAfter: nil)),
        .init(500, "InternalServerError", .retry(reason: "InternalServerError", retryAfter: nil)),
        .init(503, "ServiceUnavailable", .retry(reason: "ServiceUnavailable", retryAfter: nil)),
        .init(503, "Shutdown", .retry(reason: "Shutdown", retryAfter: nil)),
        .init(502, nil, .retry(reason: "HTTP 502", retryAfter: nil)),
        .init(599, "Whatever", .retry(reason: "Whatever", retryAfter: nil)),
        .init(400, "IdleTimeout", .retry(reason: "IdleTimeout", retryAfter: nil)),
        // Permanent for this notification.
        .init(413, "PayloadTooLarge", .failed(reason: "PayloadTooLarge")),
        .init(400, "BadCollapseId", .failed(reason: "BadCollapseId")),
        .init(400, "BadExpirationDate", .failed(reason: "BadExpirationDate")),
        .init(400, "BadMessageId", .failed(reason: "BadMessageId")),
        .init(400, "BadPriority", .failed(reason: "BadPriority")),
        .init(400, "DuplicateHeaders", .failed(reason: "DuplicateHeaders")),
        .init(400, "InvalidPushType", .failed(reason: "InvalidPushType")),
        .init(400, "MissingDeviceToken", .failed(reason: "MissingDeviceToken")),
        .init(400, "PayloadEmpty", .failed(reason: "PayloadEmpty")),
        .init(404, "BadPath", .failed(reason: "BadPath")),
        .init(405, "MethodNotAllowed", .failed(reason: "MethodNotAllowed")),
        .init(400, "NeverHeardOfIt", .failed(reason: "NeverHeardOfIt")),
        .init(400, nil, .failed(reason: "HTTP 400")),
        .init(418, nil, .failed(reason: "HTTP 418")),
        // Statuses APNs never sends: try again rather than drop.
        .init(302, nil, .retry(reason: "unexpected HTTP status 302", retryAfter: nil)),
        .init(0, nil, .retry(reason: "unexpected HTTP status 0", retryAfter: nil)),
    ]

    @Test(arguments: cases)
    func table(_ testCase: APNsClassifierCase) {
        #expect(
            APNsResponseClassifier.classify(status: testCase.status, body: testCase.body, retryAfter: nil)
                == testCase.expected)
    }

    @Test func everyKnownReasonIsCovered() {
        let covered = Set(Self.cases.compactMap(\.reason))
        for reason in APNsReason.known {
            #expect(covered.contains(reason.rawValue), "\(reason) has no classifier case")
        }
    }

    @Test func success() {
        #expect(
            APNsResponseClassifier.classify(status: 200, body: [], retryAfter: nil, apnsID: "00000000-0000-4000-8000-000000000001")
                == .sent(gatewayID: "00000000-0000-4000-8000-000000000001"))
        #expect(APNsResponseClassifier.classify(status: 200, body: [], retryAfter: nil) == .sent(gatewayID: nil))
        // A body on success is ignored.
        #expect(
            APNsResponseClassifier.classify(status: 200, body: Array(#"{"reason":"BadTopic"}"#.utf8), retryAfter: nil, apnsID: "x")
                == .sent(gatewayID: "x"))
    }

    @Test func unregisteredTimestamp() {
        let body = Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8)
        #expect(
            APNsResponseClassifier.classify(status: 410, body: body, retryAfter: nil)
                == .tokenDead(reason: "Unregistered", at: Date(timeIntervalSince1970: 1_700_000_000.123)))
        let expired = Array(#"{"timestamp":1600000000000,"reason":"ExpiredToken"}"#.utf8)
        #expect(
            APNsResponseClassifier.classify(status: 410, body: expired, retryAfter: nil)
                == .tokenDead(reason: "ExpiredToken", at: Date(timeIntervalSince1970: 1_600_000_000)))
        // A timestamp of the wrong type is ignored, the reason kept.
        let odd = Array(#"{"reason":"Unregistered","timestamp":{"x":1}}"#.utf8)
        #expect(APNsResponseClassifier.classify(status: 410, body: odd, retryAfter: nil) == .tokenDead(reason: "Unregistered", at: nil))
        // BadDeviceToken carries no date even if a timestamp were present.
        let bad = Array(#"{"reason":"BadDeviceToken","timestamp":1700000000123}"#.utf8)
        #expect(APNsResponseClassifier.classify(status: 400, body: bad, retryAfter: nil) == .tokenDead(reason: "BadDeviceToken", at: nil))
    }

    @Test(arguments: [
        "", "not json", "{", "[]", "null", "42", #""Unregistered""#, #"{"reason":5}"#, #"{"reason":""}"#,
        #"{"reason":null,"timestamp":"soon"}"#, #"{"other":"x"}"#,
    ])
    func garbageBodies(_ text: String) {
        let body = Array(text.utf8)
        #expect(APNsResponseClassifier.classify(status: 400, body: body, retryAfter: nil) == .failed(reason: "HTTP 400"))
        #expect(APNsResponseClassifier.classify(status: 500, body: body, retryAfter: nil) == .retry(reason: "HTTP 500", retryAfter: nil))
        #expect(APNsResponseClassifier.classify(status: 410, body: body, retryAfter: nil) == .tokenDead(reason: "HTTP 410", at: nil))
        #expect(APNsResponseClassifier.classify(status: 403, body: body, retryAfter: nil) == .misconfigured(reason: "HTTP 403"))
    }

    @Test func binaryGarbageBody() {
        let body: [UInt8] = [0xFF, 0x00, 0xFE, 0x7B, 0x22]
        #expect(APNsResponseClassifier.classify(status: 503, body: body, retryAfter: nil) == .retry(reason: "HTTP 503", retryAfter: nil))
        #expect(APNsResponseClassifier.classify(status: 400, body: body, retryAfter: nil) == .failed(reason: "HTTP 400"))
    }

    @Test func retryAfter() {
        let tooMany = Array(#"{"reason":"TooManyRequests"}"#.utf8)
        #expect(
            APNsResponseClassifier.classify(status: 429, body: tooMany, retryAfter: "120")
                == .retry(reason: "TooManyRequests", retryAfter: .seconds(120)))
        #expect(
            APNsResponseClassifier.classify(status: 503, body: Array(#"{"reason":"Shutdown"}"#.utf8), retryAfter: " 3 ")
                == .retry(reason: "Shutdown", retryAfter: .seconds(3)))
        #expect(
            APNsResponseClassifier.classify(status: 500, body: [], retryAfter: "1.5")
                == .retry(reason: "HTTP 500", retryAfter: .milliseconds(1500)))
        for ignored in ["", "soon", "-5", "Wed, 21 Oct 2015 07:28:00 GMT", "inf", "nan", "1e300"] {
            #expect(
                APNsResponseClassifier.classify(status: 429, body: tooMany, retryAfter: ignored)
                    == .retry(reason: "TooManyRequests", retryAfter: nil), "Retry-After: \(ignored)")
        }
        // Retry-After on a non-retry outcome changes nothing.
        #expect(APNsResponseClassifier.classify(status: 413, body: [], retryAfter: "10") == .failed(reason: "HTTP 413"))
    }

    @Test func parseRetryAfter() {
        #expect(APNsResponseClassifier.parseRetryAfter(nil) == nil)
        #expect(APNsResponseClassifier.parseRetryAfter("0") == .zero)
        #expect(APNsResponseClassifier.parseRetryAfter("60") == .seconds(60))
    }

    /// Every transport failure is tried again. One that proves the push never left (no connection,
    /// never written) is a plain retry; any other may have reached APNs, so its outcome is unknown.
    @Test func transportErrors() {
        func reason(_ error: any Error, unknown: Bool) -> String? {
            switch APNsResponseClassifier.classify(transportError: error) {
            case .retry(let reason, let retryAfter):
                #expect(!unknown, "\(error) may have reached APNs, yet was classified as a plain retry")
                #expect(retryAfter == nil)
                return reason
            case .outcomeUnknown(let reason):
                #expect(unknown, "\(error) cannot have reached APNs, yet was classified as of unknown outcome")
                return reason
            default:
                Issue.record("\(error) was not classified as retry")
                return nil
            }
        }
        #expect(reason(HTTPClientError.readTimeout, unknown: true) == "read timeout")
        #expect(reason(HTTPClientError.connectTimeout, unknown: false) == "connect timeout")
        #expect(reason(HTTPClientError.deadlineExceeded, unknown: true) == "request deadline exceeded")
        #expect(reason(HTTPClientError.remoteConnectionClosed, unknown: true) == "connection closed by APNs")
        #expect(reason(HTTPClientError.tlsHandshakeTimeout, unknown: false) == "TLS handshake timeout")
        #expect(reason(ChannelError.ioOnClosedChannel, unknown: true) == "connection closed")
        #expect(reason(ChannelError.eof, unknown: true) == "connection closed")
        #expect(reason(ChannelError.connectTimeout(.seconds(10)), unknown: false) == "connect timeout")
        #expect(reason(CancellationError(), unknown: true) == "request cancelled")
        #expect(reason(HTTPClientError.invalidURL, unknown: false)?.hasPrefix("HTTP client error: ") == true)
        #expect(reason(HTTP2ClientError.deadlineExceeded, unknown: true) == "request deadline exceeded")
        #expect(reason(HTTP2ClientError.connectionClosed("eof"), unknown: true) == "connection closed")
        #expect(reason(HTTP2ClientError.streamReset("INTERNAL_ERROR"), unknown: true) == "APNs stream reset (INTERNAL_ERROR)")
        #expect(
            reason(HTTP2ClientError.notSent("deadline passed while waiting for a stream"), unknown: false)
                == "not sent: deadline passed while waiting for a stream")
        #expect(reason(HTTP2ClientError.connectTimeout, unknown: false) == "connect timeout")
        struct Weird: Error { let detail = String(repeating: "z", count: 500) }
        let weird = reason(Weird(), unknown: true)
        #expect(weird?.hasPrefix("transport error: ") == true)
        #expect((weird?.count ?? 0) <= 140)
    }
}

@Suite struct APNsReasonTests {
    @Test func roundTripsEveryKnownReason() {
        #expect(APNsReason.known.count == 32)
        #expect(Set(APNsReason.known).count == 32)
        for reason in APNsReason.known {
            #expect(APNsReason(reason.rawValue) == reason)
            #expect(reason.description == reason.rawValue)
        }
        #expect(APNsReason("Unregistered") == .unregistered)
        #expect(APNsReason("BadDeviceToken") == .badDeviceToken)
        #expect(APNsReason("UnrelatedKeyIdInToken") == .unrelatedKeyIdInToken)
    }

    @Test func unknownKeepsTheSpelling() {
        #expect(APNsReason("NewReason2030") == .unknown("NewReason2030"))
        #expect(APNsReason("unregistered") == .unknown("unregistered"))
        #expect(APNsReason.unknown("X").rawValue == "X")
    }
}

@Suite struct DeliveryOutcomeTests {
    @Test func reasonAccessor() {
        #expect(DeliveryOutcome.sent(gatewayID: "a").reason == nil)
        #expect(DeliveryOutcome.retry(reason: "r", retryAfter: nil).reason == "r")
        #expect(DeliveryOutcome.failed(reason: "f").reason == "f")
        #expect(DeliveryOutcome.tokenDead(reason: "t", at: nil).reason == "t")
        #expect(DeliveryOutcome.refreshCredentialsAndRetry(reason: "c").reason == "c")
        #expect(DeliveryOutcome.misconfigured(reason: "m").reason == "m")
    }

    @Test func equality() {
        #expect(DeliveryOutcome.retry(reason: "r", retryAfter: .seconds(1)) != .retry(reason: "r", retryAfter: nil))
        #expect(DeliveryOutcome.tokenDead(reason: "t", at: Date(timeIntervalSince1970: 1)) != .tokenDead(reason: "t", at: nil))
    }
}
