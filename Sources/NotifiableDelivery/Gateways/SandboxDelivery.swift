import NotifiableCore
import NotifiableStore

/// Where the deliveries of apps in sandbox mode go instead of Apple and Google: gateways that
/// answer like the real ones and keep what they were sent, so operators can read every push.
public protocol SandboxDelivery: Sendable {
    /// The sender that reaches this provider's sandbox gateway.
    func sender(for provider: Provider) -> (any PushSender)?
    /// What the gateway received for the push it accepted as `gatewayID`; taken once.
    func takePush(provider: Provider, gatewayID: String) async -> SandboxPush?
    func shutdown() async
}
