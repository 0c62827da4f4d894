import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Operators' side of webhooks: register, list, delete, resume, and read the batches sent.
/// Every call is scoped to an app: another app's webhook is as absent as a missing one.
public struct WebhookStore: Sendable {
    let client: Database
    let keys: MasterKeyring
    let logger: Logger

    public init(client: Database, keys: MasterKeyring, logger: Logger) {
        self.client = client
        self.keys = keys
        self.logger = logger
    }

    static func sealingContext(webhookID: Int64) -> String { "webhook:\(webhookID)" }

    /// Registers a webhook with a new secret; nil when there is no such app.
    public func create(appID: Int64, _ subscription: WebhookSubscription) async throws -> (webhook: Webhook, secret: String)? {
        let secret = WebhookSignature.generateSecret()
        // The id is taken first because the sealed secret is bound to it.
        var id: Int64 = 0
        for try await next in try await client.query("SELECT nextval('webhooks_id_seq')", logger: logger).decode(Int64.self) { id = next }
        let sealed = try keys.seal(secret, boundTo: Self.sealingContext(webhookID: id))
        let rows = try await client.query(
            """
            INSERT INTO webhooks (id, app_id, url, events, sealed_secret, master_key_id)
            SELECT \(id), a.id, \(subscription.url), \(subscription.events.map(\.rawValue))::text[], \(Data(sealed.bytes)), \(sealed.keyID)
            FROM apps a WHERE a.id = \(appID)
            RETURNING id
            """,
            logger: logger
        )
        guard try await rows.count() > 0, let webhook = try await webhook(appID: appID, id: id) else { return nil }
        return (webhook, secret)
    }

    /// The app's webhooks; nil when there is no such app.
    public func list(appID: Int64) async throws -> [Webhook]? {
        guard try await client.query("SELECT 1 FROM apps WHERE id = \(appID)", logger: logger).count() > 0 else { return nil }
        return try await select(appID: appID, id: nil)
    }

    public func webhook(appID: Int64, id: Int64) async throws -> Webhook? {
        try await select(appID: appID, id: id).first
    }

    /// Deletes the webhook with its events and batches; false when the app has no such webhook.
    public func delete(appID: Int64, id: Int64) async throws -> Bool {
        try await client.query("DELETE FROM webhooks WHERE id = \(id) AND app_id = \(appID) RETURNING id", logger: logger).count() > 0
    }

    /// Pauses a webhook by an operator's hand: its events wait (and keep coming) until it is
    /// resumed. Nil when the app has no such webhook; pausing a paused one changes nothing.
    public func pause(appID: Int64, id: Int64) async throws -> Webhook? {
        try await client.query(
            """
            UPDATE webhooks SET state = 'paused', paused_at = now(), paused_reason = 'paused by an operator', updated_at = now()
            WHERE id = \(id) AND app_id = \(appID) AND state = 'active'
            """,
            logger: logger)
        return try await webhook(appID: appID, id: id)
    }

    /// Resumes a paused webhook: its failure count starts again and its waiting batch is due now.
    /// Nil when the app has no such webhook; resuming an active one changes nothing.
    public func resume(appID: Int64, id: Int64) async throws -> Webhook? {
        try await client.withTransaction(logger: logger) { connection in
            let resumed = try await connection.query(
                """
                UPDATE webhooks SET state = 'active', paused_at = NULL, paused_reason = NULL, consecutive_failures = 0, updated_at = now()
                WHERE id = \(id) AND app_id = \(appID) AND state = 'paused'
                RETURNING id
                """,
                logger: logger
            ).count()
            if resumed > 0 {
                try await connection.query(
                    "UPDATE webhook_batches SET run_at = now(), updated_at = now() WHERE webhook_id = \(id) AND state = 'retrying'",
                    logger: logger
                )
            }
        }
        return try await webhook(appID: appID, id: id)
    }

    /// A webhook's batches, newest first, `limit` at a time before batch `beforeID`; nil when
    /// the app has no such webhook.
    public func batches(appID: Int64, webhookID: Int64, beforeID: Int64?, limit: Int) async throws -> [WebhookBatch]? {
        guard try await webhook(appID: appID, id: webhookID) != nil else { return nil }
        let rows = try await client.query(
            """
            SELECT b.id, b.webhook_id, b.state, b.attempts, e.count, e.first, e.last, b.run_at, b.last_status, b.last_error,
                   b.created_at, b.delivered_at
            FROM webhook_batches b
            CROSS JOIN LATERAL (SELECT count(*), min(id) AS first, max(id) AS last FROM webhook_events WHERE batch_id = b.id) e
            WHERE b.webhook_id = \(webhookID) AND (\(beforeID)::int8 IS NULL OR b.id < \(beforeID)::int8)
            ORDER BY b.id DESC
            LIMIT \(limit)
            """,
            logger: logger
        )
        var batches: [WebhookBatch] = []
        for try await (id, webhookID, state, attempts, count, first, last, runAt, status, error, createdAt, deliveredAt) in rows.decode(
            (Int64, Int64, String, Int32, Int64, Int64?, Int64?, Date, Int32?, String?, Date, Date?).self
        ) {
            batches.append(
                WebhookBatch(
                    id: id, webhookID: webhookID, state: state, attempts: Int(attempts), eventCount: count, firstEventID: first,
                    lastEventID: last, runAt: runAt, lastStatus: status.map(Int.init), lastError: error, createdAt: createdAt, deliveredAt: deliveredAt
                ))
        }
        return batches
    }

    private func select(appID: Int64, id: Int64?) async throws -> [Webhook] {
        let rows = try await client.query(
            """
            SELECT w.id, w.app_id, w.url, w.events, w.state, w.paused_at, w.paused_reason, w.consecutive_failures,
                   (SELECT count(*) FROM webhook_events e WHERE e.webhook_id = w.id AND e.batch_id IS NULL), w.created_at
            FROM webhooks w
            WHERE w.app_id = \(appID) AND (\(id)::int8 IS NULL OR w.id = \(id)::int8)
            ORDER BY w.id
            """,
            logger: logger
        )
        var webhooks: [Webhook] = []
        for try await (id, appID, url, events, state, pausedAt, reason, failures, pending, createdAt) in rows.decode(
            (Int64, Int64, String, [String], String, Date?, String?, Int32, Int64, Date).self
        ) {
            webhooks.append(
                Webhook(
                    id: id, appID: appID, url: url, events: events.compactMap(WebhookEventType.init(rawValue:)),
                    state: Webhook.State(rawValue: state) ?? .paused, pausedAt: pausedAt, pausedReason: reason,
                    consecutiveFailures: Int(failures), pendingEvents: pending, createdAt: createdAt
                ))
        }
        return webhooks
    }
}
