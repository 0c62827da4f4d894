import Foundation
import NotifiableCore
import NotifiableStore

/// The admin API's answers as text, for the CLI commands that print the same objects.
public enum AdminJSON {
    public static func app(
        _ app: App, policy: UserTokenPolicy, credentials: [AppStore.CredentialSummary], gateways: GatewaySummaries
    ) -> String {
        text(AppJSON(app, policy: policy, credentials: credentials, gateways: gateways))
    }

    /// `POST /admin/apps/:id/user_tokens/rotate`'s answer.
    public static func userTokenRotation(_ policy: UserTokenPolicy) -> String {
        text(UserTokenRotationJSON(policy))
    }

    public static func rotation(_ rotation: AppStore.Rotation) -> String {
        text(RotationJSON(rotation))
    }

    /// `GET /admin/queue`'s answer.
    public static func queue(_ stats: QueueStats) -> String {
        text(QueueAdminController.QueueJSON(stats))
    }

    /// A notification as `POST /api/v1/notifications` answers it.
    public static func notification(_ notification: StoredNotification, counters: NotificationCounters?) -> String {
        text(NotificationJSON(notification, counters: counters))
    }

    /// A webhook as `POST /admin/apps/:id/webhooks` answers it (with the secret) or as listed (without).
    public static func webhook(_ webhook: Webhook, secret: String?) -> String {
        text(WebhookJSON(webhook, secret: secret))
    }

    /// `GET /admin/apps/:id/webhooks`'s answer.
    public static func webhooks(_ webhooks: [Webhook]) -> String {
        text(Page(data: webhooks.map { WebhookJSON($0) }, nextCursor: nil))
    }

    /// `GET /admin/apps/:id/webhooks/:webhook_id/batches`'s answer (one page).
    public static func webhookBatches(_ batches: [WebhookBatch]) -> String {
        text(Page(data: batches.map(WebhookBatchJSON.init), nextCursor: nil))
    }

    static func text(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        return String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
    }
}
