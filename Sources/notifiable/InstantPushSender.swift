import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// A sender that reports every delivery sent at once without sending anything: with it, a
/// worker measures the queue alone (claim, record, lease), not a gateway. Only
/// `notifiable work --instant-sender-for-benchmarks` installs it, and says so loudly.
struct InstantPushSender: PushSender {
    func send(_ delivery: ClaimedDelivery) async -> DeliveryOutcome { .sent(gatewayID: nil) }
    func shutdown() async {}
}
