import Foundation

/// What became of one claimed delivery after its attempt, as the recorder writes it: the state,
/// and what the same transaction must do besides (invalidate a dead token's device, mark refused
/// settings, list a sandbox push).
public struct DeliveryResult: Sendable, Equatable {
    public let deliveryID: Int64
    public let attempt: Int
    /// `sent`, `retrying`, `failed` or `dead`: the states an attempt can end in.
    public let state: DeliveryState
    /// When to try again (retrying only).
    public let runAt: Date?
    public let reason: String?
    public let gatewayStatus: Int?
    public let gatewayID: String?
    /// Sent to the built-in gateway of an app in sandbox mode.
    public let sandbox: Bool
    /// What that gateway received, when it kept it.
    public let sandboxPush: SandboxPush?
    /// The gateway called the token dead: its device is invalidated with the state.
    public let deadToken: DeadToken?
    /// The gateway refused the app's settings: they are marked with the state.
    public let refusedSettings: RefusedSettings?
    /// The attempt got no answer after its request may have reached the gateway: counted on the
    /// delivery (`unknown_outcomes`), the one thing that can explain a push shown twice.
    public var outcomeUnknown = false
    /// The attempt was never made (its lease could not be known to outlast a send): the delivery
    /// is ready again at once. Its claim still counts among the attempts, so that a record of it
    /// applied twice (a retry after a commit whose answer was lost) can never match a later claim.
    public var unsent = false

    /// A claimed delivery handed back unsent, to be claimed again at once.
    public static func givenBack(_ delivery: ClaimedDelivery, reason: String, now: Date = Date()) -> DeliveryResult {
        var result = DeliveryResult(deliveryID: delivery.id, attempt: delivery.attempt, state: .retrying, runAt: now, reason: reason)
        result.unsent = true
        return result
    }

    public init(
        deliveryID: Int64, attempt: Int, state: DeliveryState, runAt: Date? = nil, reason: String? = nil,
        gatewayStatus: Int? = nil, gatewayID: String? = nil, sandbox: Bool = false, sandboxPush: SandboxPush? = nil,
        deadToken: DeadToken? = nil, refusedSettings: RefusedSettings? = nil
    ) {
        self.sandbox = sandbox || sandboxPush != nil
        self.sandboxPush = sandboxPush
        self.deliveryID = deliveryID
        self.attempt = attempt
        self.state = state
        self.runAt = runAt
        self.reason = reason
        self.gatewayStatus = gatewayStatus
        self.gatewayID = gatewayID
        self.deadToken = deadToken
        self.refusedSettings = refusedSettings
    }

    /// Carries out `decision` for `delivery`. `sentAt`: when the attempt began; a "token dead"
    /// verdict without a date of its own is no older than that.
    public init(_ decision: DeliveryDecision, for delivery: ClaimedDelivery, sentAt: Date) {
        let id = delivery.id, attempt = delivery.attempt
        switch decision {
        case .sent(let gatewayID):
            self.init(deliveryID: id, attempt: attempt, state: .sent, gatewayID: gatewayID)
        case .retry(let at, let reason):
            self.init(deliveryID: id, attempt: attempt, state: .retrying, runAt: at, reason: reason)
        case .failed(let reason):
            self.init(deliveryID: id, attempt: attempt, state: .failed, reason: reason)
        case .failedTokenDead(let reason, let at):
            let deadToken = DeadToken(deviceID: delivery.deviceID, token: delivery.token, reason: reason, at: at ?? sentAt)
            self.init(deliveryID: id, attempt: attempt, state: .failed, reason: reason, deadToken: deadToken)
        case .dead(let reason):
            self.init(deliveryID: id, attempt: attempt, state: .dead, reason: reason)
        case .deadMisconfigured(let reason, let version):
            let refused = RefusedSettings(provider: delivery.provider, appID: delivery.appID, reason: reason, settingsVersion: version)
            self.init(deliveryID: id, attempt: attempt, state: .dead, reason: reason, refusedSettings: refused)
        }
    }
}

/// A gateway's verdict that a device's token is dead. The device is invalidated unless it
/// registered again after `at` (the verdict is stale) or holds another token by now.
public struct DeadToken: Sendable, Equatable {
    public let deviceID: Int64
    public let token: String
    public let reason: String
    public let at: Date

    public init(deviceID: Int64, token: String, reason: String, at: Date) {
        self.deviceID = deviceID
        self.token = token
        self.reason = reason
        self.at = at
    }
}

/// A gateway's refusal of an app's settings for a provider, as saved at `settingsVersion`: they
/// are marked misconfigured (if still that version), and nothing more is sent for the app until
/// they are saved again.
public struct RefusedSettings: Sendable, Hashable {
    public let provider: Provider
    public let appID: Int64
    public let reason: String
    public let settingsVersion: Date

    public init(provider: Provider, appID: Int64, reason: String, settingsVersion: Date) {
        self.provider = provider
        self.appID = appID
        self.reason = reason
        self.settingsVersion = settingsVersion
    }
}

/// What recording a batch changed besides the deliveries: the devices it invalidated and the
/// settings it newly marked (each once, however many of the batch's deliveries named them).
public struct RecordedEffects: Sendable, Equatable {
    public var invalidatedDevices: Set<Int64> = []
    public var newlyRefusedSettings: [RefusedSettings] = []

    public init(invalidatedDevices: Set<Int64> = [], newlyRefusedSettings: [RefusedSettings] = []) {
        self.invalidatedDevices = invalidatedDevices
        self.newlyRefusedSettings = newlyRefusedSettings
    }
}
