import Foundation

/// What becomes of a delivery after one attempt: the one place that decides it, a pure function
/// of the gateway's classified answer, the attempt, the retry policy and the time. The worker
/// carries out the decision (records the state, invalidates the device, marks the app's settings
/// misconfigured); it decides nothing itself.
public enum DeliveryDecision: Sendable, Equatable {
    /// The gateway took it: `sent`.
    case sent(gatewayID: String?)
    /// Try again at `at`: `retrying`.
    case retry(at: Date, reason: String)
    /// The gateway refused it for good: `failed`.
    case failed(reason: String)
    /// The gateway called the token dead (`at`: since when, when it says): `failed`, and the
    /// device is invalidated unless it registered again since.
    case failedTokenDead(reason: String, at: Date?)
    /// Given up (attempts spent, expiry reached, settings refused): `dead`.
    case dead(reason: String)
    /// The app's settings were refused: `dead`, and the settings saved at `settingsVersion` are
    /// marked misconfigured so that no more is sent for the app until they are saved again.
    case deadMisconfigured(reason: String, settingsVersion: Date)

    /// The state the delivery is recorded in.
    public var state: DeliveryState {
        switch self {
        case .sent: .sent
        case .retry: .retrying
        case .failed, .failedTokenDead: .failed
        case .dead, .deadMisconfigured: .dead
        }
    }

    /// The decision after attempt `attempt` (1 for the first) of a delivery that expires at
    /// `expiresAt`, whose answer the sender classified as `outcome`. `sandbox`: the app sends to
    /// the built-in gateways, whose refused settings are nothing for an operator to fix.
    public static func after(
        _ outcome: DeliveryOutcome, attempt: Int, policy: RetryPolicy, now: Date, expiresAt: Date?, sandbox: Bool,
        random: inout some RandomNumberGenerator
    ) -> DeliveryDecision {
        switch outcome {
        case .sent(let gatewayID):
            return .sent(gatewayID: gatewayID)
        case .retry(let reason, let retryAfter):
            let next = policy.nextAttempt(after: attempt, retryAfter: retryAfter, now: now, expiresAt: expiresAt, random: &random)
            return next.map { .retry(at: $0, reason: reason) } ?? .dead(reason: "gave up after \(attempt) attempts: \(reason)")
        case .outcomeUnknown(let reason):
            let next = policy.nextAttempt(after: attempt, retryAfter: nil, now: now, expiresAt: expiresAt, random: &random)
            return next.map { .retry(at: $0, reason: reason) } ?? .dead(reason: "gave up after \(attempt) attempts: \(reason)")
        case .refreshCredentialsAndRetry(let reason):
            // At once with fresh credentials, still within the attempt budget and before expiry.
            let withinBudget = attempt < policy.maxAttempts && (expiresAt.map { now < $0 } ?? true)
            return withinBudget ? .retry(at: now, reason: reason) : .dead(reason: "gave up after \(attempt) attempts: \(reason)")
        case .failed(let reason):
            return .failed(reason: reason)
        case .tokenDead(let reason, let at):
            return .failedTokenDead(reason: reason, at: at)
        case .misconfigured(let reason, _) where sandbox:
            return .dead(reason: "sandbox: \(reason)")
        case .misconfigured(let reason, nil):
            return .dead(reason: reason)
        case .misconfigured(let reason, let version?):
            return .deadMisconfigured(reason: reason, settingsVersion: version)
        }
    }

    /// `after(…)` with the system's random numbers (for the retry's jitter).
    public static func after(
        _ outcome: DeliveryOutcome, attempt: Int, policy: RetryPolicy, now: Date, expiresAt: Date?, sandbox: Bool
    ) -> DeliveryDecision {
        var random = SystemRandomNumberGenerator()
        return after(outcome, attempt: attempt, policy: policy, now: now, expiresAt: expiresAt, sandbox: sandbox, random: &random)
    }
}
