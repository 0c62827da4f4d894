import Foundation

/// The fates a delivery meets without an answer from a gateway, decided here as an attempt's
/// outcome is (`after(_:attempt:…)`); the queue's statements only apply them.
extension DeliveryDecision {
    /// What a delivery rescued from a lease that ran out carries (until its next attempt).
    public static let leaseRanOutReason = "worker lease ran out"

    /// Its lease ran out in a worker's hands (the worker died or stalled), after `attempts` claims:
    /// that worker may have sent it, so it goes again at once while the policy allows attempts,
    /// and is given up after the last. The reason keeps the one it had before.
    public static func afterLeaseRanOut(attempts: Int, previousReason: String?, policy: RetryPolicy, now: Date) -> DeliveryDecision {
        let reason = leaseRanOutReason + (previousReason.map { " after: \($0)" } ?? "")
        return attempts >= policy.maxAttempts ? .dead(reason: reason) : .retry(at: now, reason: reason)
    }

    /// Still waiting when its notification (or its own) expiry passed: it can no longer be sent.
    public static let expired = DeliveryDecision.dead(reason: "notification expired")

    /// Its stored content cannot be read: no attempt could ever send it.
    public static let unreadableContent = DeliveryDecision.failed(reason: "stored notification content is unreadable")

    /// No sender of this worker reaches its provider (in sandbox mode: no built-in gateway does).
    public static func unsupportedProvider(_ provider: Provider, sandbox: Bool) -> DeliveryDecision {
        .dead(reason: "\(provider.rawValue)_not_supported: this worker cannot send to \(provider.rawValue)\(sandbox ? " in sandbox mode" : "")")
    }

    /// The reason recorded with the state, nil for `sent`.
    public var reason: String? {
        switch self {
        case .sent: nil
        case .retry(_, let reason), .failed(let reason), .failedTokenDead(let reason, _), .dead(let reason), .deadMisconfigured(let reason, _): reason
        }
    }
}
