import Logging
import NotifiableCore
import NotifiableStore
import Synchronization

/// Logs a warning the first time this process sees deliveries of a notification go dead (its
/// gateway refused the app's settings, the app has none for the provider, retries ran out): one
/// line per notification with how many of the batch were lost and why, not one per device.
final class LostDeliveryWarnings: Sendable {
    /// Notifications already warned about, oldest first; bounded, so a long-running worker's
    /// memory is too (a notification forgotten here may be warned about once more).
    private let warned = Mutex<(set: Set<Int64>, order: [Int64])>(([], []))
    private let capacity: Int

    init(capacity: Int = 10_000) {
        self.capacity = capacity
    }

    func check(_ attempts: [Attempt], logger: Logger) {
        var lost: [Int64: (appID: Int64, count: Int, reason: String)] = [:]
        for (delivery, result) in attempts where result.state == .dead {
            let entry = lost[delivery.notificationID] ?? (delivery.appID, 0, result.reason ?? "unknown")
            lost[delivery.notificationID] = (entry.appID, entry.count + 1, entry.reason)
        }
        for (notificationID, loss) in lost.sorted(by: { $0.key < $1.key }) where firstTime(notificationID) {
            logger.warning(
                "deliveries of a notification went dead",
                metadata: [
                    "notification_id": .stringConvertible(notificationID), "app_id": .stringConvertible(loss.appID),
                    "dead_in_batch": .stringConvertible(loss.count), "reason": "\(loss.reason)",
                ])
        }
    }

    private func firstTime(_ notificationID: Int64) -> Bool {
        warned.withLock { warned in
            guard warned.set.insert(notificationID).inserted else { return false }
            warned.order.append(notificationID)
            if warned.order.count > capacity {
                warned.set.remove(warned.order.removeFirst())
            }
            return true
        }
    }
}
