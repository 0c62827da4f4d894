import Foundation
import NotifiableCore
import NotifiableStore

/// The admin API's answers as text, for the CLI commands that print the same objects.
public enum AdminJSON {
    public static func app(
        _ app: App, policy: UserTokenPolicy, credentials: [AppRegistry.CredentialSummary], apns: APNsSettingsSummary?, fcm: FCMSettingsSummary?
    ) -> String {
        text(AppJSON(
            app, policy: policy, credentials: credentials, apns: .some(apns.map(APNsSettingsJSON.init)), fcm: .some(fcm.map(FCMSettingsJSON.init))
        ))
    }

    /// `POST /admin/apps/:id/user_tokens/rotate`'s answer.
    public static func userTokenRotation(_ policy: UserTokenPolicy) -> String {
        text(UserTokenRotationJSON(policy))
    }

    public static func rotation(_ rotation: AppRegistry.Rotation) -> String {
        text(RotationJSON(rotation))
    }

    /// `GET /admin/queue`'s answer.
    public static func queue(_ stats: QueueStats) -> String {
        text(AdminController.QueueJSON(stats))
    }

    /// A notification as `POST /api/v1/notifications` answers it.
    public static func notification(_ notification: StoredNotification, counters: NotificationCounters?) -> String {
        text(NotificationJSON(notification, counters: counters))
    }

    static func text(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        return String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
    }
}
