import Foundation
import NotifiableCore
import NotifiableSandbox
import Testing

@testable import NotifiableDelivery

/// Every answer APNs and FCM document, through the sender's classifier and the one decision
/// function, to the state the delivery is recorded in: on a first attempt, and on the last one
/// the retry policy allows (where a transient answer becomes `dead`).
@Suite struct DeliveryDecisionTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), maxDelay: .seconds(60), jitter: 0)

    static func decide(_ outcome: DeliveryOutcome, attempt: Int = 1, expiresAt: Date? = nil, sandbox: Bool = false) -> DeliveryDecision {
        var random = SplitMix64(seed: 7)
        return DeliveryDecision.after(outcome, attempt: attempt, policy: policy, now: now, expiresAt: expiresAt, sandbox: sandbox, random: &random)
    }

    /// (status, APNs reason, state on a first attempt, state on the last allowed attempt), from
    /// Apple's "Handling notification responses from APNs" table (docs/compatibility.md §8).
    static let apns: [(Int, String, DeliveryState, DeliveryState)] = [
        (400, "BadCollapseId", .failed, .failed), (400, "BadDeviceToken", .failed, .failed), (400, "BadExpirationDate", .failed, .failed),
        (400, "BadMessageId", .failed, .failed), (400, "BadPriority", .failed, .failed), (400, "BadTopic", .dead, .dead),
        (400, "DeviceTokenNotForTopic", .failed, .failed), (400, "DuplicateHeaders", .failed, .failed), (400, "IdleTimeout", .retrying, .dead),
        (400, "InvalidPushType", .failed, .failed), (400, "MissingDeviceToken", .failed, .failed), (400, "MissingTopic", .dead, .dead),
        (400, "PayloadEmpty", .failed, .failed), (400, "TopicDisallowed", .dead, .dead),
        (403, "BadCertificate", .dead, .dead), (403, "BadCertificateEnvironment", .dead, .dead), (403, "ExpiredProviderToken", .retrying, .dead),
        (403, "Forbidden", .dead, .dead), (403, "InvalidProviderToken", .dead, .dead), (403, "MissingProviderToken", .dead, .dead),
        (403, "UnrelatedKeyIdInToken", .dead, .dead), (403, "BadEnvironmentKeyInToken", .dead, .dead),
        (404, "BadPath", .failed, .failed), (405, "MethodNotAllowed", .failed, .failed),
        (410, "ExpiredToken", .failed, .failed), (410, "Unregistered", .failed, .failed), (413, "PayloadTooLarge", .failed, .failed),
        (429, "TooManyProviderTokenUpdates", .retrying, .dead), (429, "TooManyRequests", .retrying, .dead),
        (500, "InternalServerError", .retrying, .dead), (503, "ServiceUnavailable", .retrying, .dead), (503, "Shutdown", .retrying, .dead),
        (502, "", .retrying, .dead), (418, "SomethingNew", .failed, .failed),
    ]

    @Test func everyAPNsAnswer() {
        for (status, reason, first, last) in Self.apns {
            let body = reason.isEmpty ? [] : Array(#"{"reason":"\#(reason)","timestamp":1700000000000}"#.utf8)
            let outcome = APNsResponseClassifier.classify(status: status, body: body, retryAfter: nil)
            #expect(Self.decide(outcome).state == first, "\(status) \(reason) on a first attempt")
            #expect(Self.decide(outcome, attempt: Self.policy.maxAttempts).state == last, "\(status) \(reason) on the last attempt")
        }
        // A dead token is failed with the verdict's date, so the device is invalidated unless it registered since.
        let gone = APNsResponseClassifier.classify(status: 410, body: Array(#"{"reason":"Unregistered","timestamp":1700000000000}"#.utf8), retryAfter: nil)
        #expect(Self.decide(gone) == .failedTokenDead(reason: "Unregistered", at: Date(timeIntervalSince1970: 1_700_000_000)))
        #expect(Self.decide(.sent(gatewayID: "abc")) == .sent(gatewayID: "abc"))
    }

    /// (HTTP status, canonical status, FcmError errorCode, first, last), from FCM's ErrorCode
    /// reference (docs/compatibility.md §9).
    static let fcm: [(Int, String, String?, DeliveryState, DeliveryState)] = [
        (404, "NOT_FOUND", "UNREGISTERED", .failed, .failed), (403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", .failed, .failed),
        (400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", .failed, .failed), (429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", .retrying, .dead),
        (503, "UNAVAILABLE", "UNAVAILABLE", .retrying, .dead), (500, "INTERNAL", "INTERNAL", .retrying, .dead),
        (401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR", .dead, .dead), (401, "UNAUTHENTICATED", nil, .retrying, .dead),
        (403, "PERMISSION_DENIED", nil, .dead, .dead), (404, "NOT_FOUND", nil, .dead, .dead), (408, "DEADLINE_EXCEEDED", nil, .retrying, .dead),
    ]

    @Test func everyFCMAnswer() {
        for (status, canonical, errorCode, first, last) in Self.fcm {
            let details = errorCode.map { #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}]"# } ?? ""
            let body = Array(#"{"error":{"code":\#(status),"message":"m","status":"\#(canonical)"\#(details)}}"#.utf8)
            let outcome = FCMResponseClassifier.classify(status: status, body: body, retryAfter: nil, now: Self.now)
            #expect(Self.decide(outcome).state == first, "\(status) \(canonical) \(errorCode ?? "-") on a first attempt")
            #expect(Self.decide(outcome, attempt: Self.policy.maxAttempts).state == last, "\(status) \(errorCode ?? "-") on the last attempt")
        }
    }

    @Test func retriesHonourRetryAfterAndNeverPassTheExpiry() {
        #expect(Self.decide(.retry(reason: "busy", retryAfter: .seconds(30))) == .retry(at: Self.now.addingTimeInterval(30), reason: "busy"))
        #expect(Self.decide(.retry(reason: "busy", retryAfter: nil)) == .retry(at: Self.now.addingTimeInterval(1), reason: "busy"))
        #expect(Self.decide(.retry(reason: "busy", retryAfter: .seconds(30)), expiresAt: Self.now.addingTimeInterval(10)).state == .dead)
        #expect(Self.decide(.refreshCredentialsAndRetry(reason: "ExpiredProviderToken")) == .retry(at: Self.now, reason: "ExpiredProviderToken"))
        #expect(Self.decide(.refreshCredentialsAndRetry(reason: "x"), expiresAt: Self.now).state == .dead)
    }

    @Test func refusedSettingsAreMarkedOnlyWhenTheyAreTheApps() {
        let version = Date(timeIntervalSince1970: 1_799_999_000)
        #expect(
            Self.decide(.misconfigured(reason: "InvalidProviderToken", settingsVersion: version))
                == .deadMisconfigured(reason: "InvalidProviderToken", settingsVersion: version))
        #expect(Self.decide(.misconfigured(reason: "InvalidProviderToken", settingsVersion: nil)) == .dead(reason: "InvalidProviderToken"))
        // The sandbox's own gateways: nothing for an operator to fix.
        #expect(Self.decide(.misconfigured(reason: "x", settingsVersion: version), sandbox: true) == .dead(reason: "sandbox: x"))
    }
}
