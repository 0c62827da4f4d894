import NotifiableStore

/// Hands one claimed delivery to its gateway and says what happened. Senders never throw:
/// every failure is an outcome the worker knows how to record.
public protocol PushSender: Sendable {
    func send(_ delivery: ClaimedDelivery) async -> DeliveryOutcome
    /// Drops what the sender knows about an app's settings (they changed, or were found wrong).
    func forget(appID: Int64) async
    func shutdown() async
}
