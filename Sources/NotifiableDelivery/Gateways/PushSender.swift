import NotifiableCore

/// Hands one claimed delivery to its gateway and says what happened. Senders never throw:
/// every failure is an outcome the worker knows how to record.
public protocol PushSender: Sendable {
    func send(_ delivery: ClaimedDelivery) async -> DeliveryOutcome
    func shutdown() async
}
