import Foundation
import NotifiableCore

/// One attempt at one claimed delivery: hands it to its provider's sender (or the sandbox's),
/// and turns the answer into the result to record through `DeliveryDecision`, the one place
/// that decides a delivery's fate.
struct PushAttempt: Sendable {
    let senders: [Provider: any PushSender]
    let sandbox: (any SandboxDelivery)?
    let retryPolicy: RetryPolicy
    let metrics: DeliveryMetrics

    func callAsFunction(_ delivery: ClaimedDelivery) async -> DeliveryResult {
        let now = Date()
        if let expiresAt = delivery.expiresAt, expiresAt <= now {
            return DeliveryResult(.expired, for: delivery, sentAt: now)
        }
        guard let sender = delivery.sandbox ? sandbox?.sender(for: delivery.provider) : senders[delivery.provider] else {
            return DeliveryResult(.unsupportedProvider(delivery.provider, sandbox: delivery.sandbox), for: delivery, sentAt: now)
        }
        let start = ContinuousClock.now
        let outcome = await sender.send(delivery)
        metrics.gatewayRequest(provider: delivery.provider, sandbox: delivery.sandbox, took: ContinuousClock.now - start)
        if delivery.sandbox, case .sent(let gatewayID) = outcome {
            var push: SandboxPush?
            if let gatewayID { push = await sandbox?.takePush(provider: delivery.provider, gatewayID: gatewayID) }
            return DeliveryResult(
                deliveryID: delivery.id, attempt: delivery.attempt, state: .sent, gatewayID: gatewayID, sandbox: true, sandboxPush: push
            )
        }
        let decision = DeliveryDecision.after(
            outcome, attempt: delivery.attempt, policy: retryPolicy, now: Date(), expiresAt: delivery.expiresAt, sandbox: delivery.sandbox
        )
        var result = DeliveryResult(decision, for: delivery, sentAt: now)
        result.outcomeUnknown = outcome.isUnknown
        return result
    }
}
