import Foundation
import NotifiableCore

/// The headers of an APNs request (all but `authorization`, which the sender adds for token
/// authentication).
public enum APNsRequestHeaders {
    /// `apns-topic`, `apns-push-type`, `apns-priority`, `apns-expiration`, `apns-collapse-id`
    /// and `apns-id`, in that order.
    ///
    /// - `apns-push-type`: `background` for a background-only notification, else `alert`.
    /// - `apns-priority`: `5` for background-only or normal-priority notifications, else `10`
    ///   (APNs rejects priority 10 on background pushes).
    /// - `apns-expiration`: `expiresAt` in whole seconds since 1970, so APNs stores the push for an
    ///   offline device and retries until then; `0` (try once, never store) for a now-or-never
    ///   notification (`"ttl_seconds": 0`) or one whose expiry is not after `now`. Content without an expiry (stored before
    ///   apps had a time to live) gets FCM's four weeks.
    /// - `apns-collapse-id`: the sender's collapse id, else one per notification, so a push sent
    ///   twice replaces itself on the device (`NotificationContent.collapseIdentifier`).
    /// - `apns-id`: derived from the delivery id, so every retry of a delivery carries the same.
    ///
    /// A push to a Live Activity has `apns-push-type: liveactivity`, the topic
    /// `<bundle id>.push-type.liveactivity` and its own priority (5 unless it asked for high).
    ///
    /// Then the sender's `apns.headers` overrides, each replacing the header of its name or added
    /// after them (the request parser refuses `apns-topic` and `apns-id`).
    public static func make(
        content: NotificationContent, topic: String, deliveryID: Int64, notificationID: Int64, now: Date
    ) -> [(String, String)] {
        if let activity = content.liveActivity {
            // A Live Activity's own push type and topic; the timestamp, not a collapse id, keeps
            // the newest state on the device.
            return [
                ("apns-topic", LiveActivityPush.topic(bundleID: topic)),
                ("apns-push-type", "liveactivity"),
                ("apns-priority", activity.priority == .high ? "10" : "5"),
                ("apns-expiration", content.nowOrNever ? "0" : expiration(content.expiresAt, now: now)),
                ("apns-id", apnsID(forDelivery: deliveryID)),
            ]
        }
        let background = content.isBackgroundOnly
        var headers: [(String, String)] = [
            ("apns-topic", topic),
            ("apns-push-type", background ? "background" : "alert"),
            ("apns-priority", background || content.priority == .normal ? "5" : "10"),
            ("apns-expiration", content.nowOrNever ? "0" : expiration(content.expiresAt, now: now)),
        ]
        headers.append(("apns-collapse-id", content.collapseIdentifier(notificationID: notificationID)))
        headers.append(("apns-id", apnsID(forDelivery: deliveryID)))
        for (name, value) in (content.overrides?.apnsHeaders ?? [:]).sorted(by: { $0.key < $1.key }) {
            if let index = headers.firstIndex(where: { $0.0 == name }) {
                headers[index].1 = value
            } else {
                headers.append((name, value))
            }
        }
        return headers
    }

    /// A version-4-shaped UUID holding the delivery id's 64 bits:
    /// `00000000-HHHH-4000-8000-LLLLLLLLLLLL`, with the id's upper 16 bits as `HHHH` and its lower
    /// 48 bits as `LLLLLLLLLLLL` (lower-case hex). For ids below 2^48 that is
    /// `00000000-0000-4000-8000-` followed by the id in 12 hex digits.
    public static func apnsID(forDelivery deliveryID: Int64) -> String {
        let bits = UInt64(bitPattern: deliveryID)
        let high = hex(bits >> 48, digits: 4)
        let low = hex(bits & 0xFFFF_FFFF_FFFF, digits: 12)
        return "00000000-\(high)-4000-8000-\(low)"
    }

    static func expiration(_ expiresAt: Date?, now: Date) -> String {
        let expiresAt = expiresAt ?? now.addingTimeInterval(TimeInterval(PushDefaults.defaultTimeToLiveSeconds))
        guard expiresAt > now else { return "0" }
        let seconds = expiresAt.timeIntervalSince1970.rounded(.down)
        // A date too far out for Int64 cannot come from validated input; saturate rather than trap.
        guard seconds < 9.2e18 else { return String(Int64.max) }
        return String(Int64(seconds))
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
