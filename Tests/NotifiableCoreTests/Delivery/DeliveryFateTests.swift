import Foundation
import NotifiableCore
import Testing

/// The fates decided without a gateway's answer: a lease that ran out, an expiry, unreadable
/// content, a provider no sender reaches.
@Suite struct DeliveryFateTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), maxDelay: .seconds(60), jitter: 0)

    @Test func aLeaseThatRanOutGoesAgainAtOnceUntilTheLastAttempt() {
        #expect(
            DeliveryDecision.afterLeaseRanOut(attempts: 1, previousReason: nil, policy: Self.policy, now: Self.now)
                == .retry(at: Self.now, reason: "worker lease ran out"))
        #expect(
            DeliveryDecision.afterLeaseRanOut(attempts: 2, previousReason: "request deadline exceeded", policy: Self.policy, now: Self.now)
                == .retry(at: Self.now, reason: "worker lease ran out after: request deadline exceeded"))
        let last = DeliveryDecision.afterLeaseRanOut(attempts: 3, previousReason: nil, policy: Self.policy, now: Self.now)
        #expect(last == .dead(reason: "worker lease ran out") && last.state == .dead)
    }

    @Test func theOtherFatesSayWhatBecameOfTheDelivery() {
        #expect(DeliveryDecision.expired.state == .dead && DeliveryDecision.expired.reason == "notification expired")
        #expect(DeliveryDecision.unreadableContent.state == .failed)
        #expect(DeliveryDecision.unsupportedProvider(.fcm, sandbox: true).reason == "fcm_not_supported: this worker cannot send to fcm in sandbox mode")
        #expect(DeliveryDecision.sent(gatewayID: "x").reason == nil)
    }
}
