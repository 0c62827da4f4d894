import Foundation

/// The background push that tells a user's other devices a notification's new state, so each
/// can update or remove what it shows. It carries `n_id` (added to every push) and, as
/// strings so that FCM data holds them as they are:
///
/// - `n_sync`: `updated` or `deleted` (expiry sends nothing: each device knows the expiry)
/// - `n_read_state`, `n_user_action_state`: the state now
/// - `n_cursor`: the change's cursor, from which the device's next `GET /api/v1/me/changes` may start
///
/// It shows nothing (APNs `content-available` at priority 5, push type background; FCM a
/// data-only message at normal priority) and collapses per notification (`apns-collapse-id`,
/// FCM `collapse_key`), so a device offline through a burst of changes keeps only the last.
public enum SyncSignal {
    /// Background pushes wait behind what the user sees: APNs takes them at 5 only.
    public static let priority = NotificationPriority.normal

    public static func content(for change: UserNotificationChange, expiresAt: Date) -> NotificationContent {
        NotificationContent(
            parameters: [
                "n_sync": .string(change.kind.rawValue),
                "n_read_state": .string(change.readState.rawValue),
                "n_user_action_state": .string(change.actionState.rawValue),
                "n_cursor": .string(String(change.seq)),
            ],
            contentAvailable: true, priority: priority, collapseID: "n\(change.notificationID)-state", expiresAt: expiresAt
        )
    }
}
