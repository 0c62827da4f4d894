import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// A batch a worker has claimed: where to send it, how to sign it, and the body.
public struct ClaimedWebhookBatch: Sendable {
    public let id: Int64
    public let webhookID: Int64
    /// This claim's attempt number; an outcome is recorded only while the batch still carries it.
    public let attempt: Int
    public let url: String
    /// Nil when the sealed secret cannot be opened (a master key missing from the ring).
    public let secret: String?
    /// Failed attempts of the webhook before this one (for backoff).
    public let consecutiveFailures: Int
    public let eventIDs: [Int64]
    /// `{"events": [...]}`, exactly the bytes signed and sent.
    public let body: [UInt8]
}

/// `webhook_batches` as a queue: forms batches from pending events, claims ready batches with
/// `FOR UPDATE SKIP LOCKED` and a lease, records outcomes (pausing a webhook that keeps
/// failing), and returns batches whose lease ran out.
public struct WebhookQueueStore: Sendable {
    let client: Database
    let keys: MasterKeyring
    let logger: Logger

    public init(client: Database, keys: MasterKeyring, logger: Logger) {
        self.client = client
        self.keys = keys
        self.logger = logger
    }

    /// Puts up to `batchSize` of the oldest pending events of each active webhook that has no
    /// unfinished batch into a new batch; answers how many batches were formed. A webhook has
    /// at most one unfinished batch (a unique index), so batches reach a receiver in order.
    @discardableResult
    public func formBatches(batchSize: Int, webhooks limit: Int = 100) async throws -> Int {
        try await client.query(
            """
            WITH candidates AS (
                SELECT w.id FROM webhooks w
                WHERE w.state = 'active'
                  AND EXISTS (SELECT 1 FROM webhook_events e WHERE e.webhook_id = w.id AND e.batch_id IS NULL)
                  AND NOT EXISTS (SELECT 1 FROM webhook_batches b WHERE b.webhook_id = w.id AND b.state <> 'delivered')
                ORDER BY w.id
                LIMIT \(limit)
            ), batches AS (
                INSERT INTO webhook_batches (webhook_id)
                SELECT id FROM candidates
                ON CONFLICT (webhook_id) WHERE state <> 'delivered' DO NOTHING
                RETURNING id, webhook_id
            ), carried AS (
                UPDATE webhook_events e SET batch_id = b.id
                FROM batches b
                CROSS JOIN LATERAL (SELECT p.id FROM webhook_events p WHERE p.webhook_id = b.webhook_id AND p.batch_id IS NULL
                                    ORDER BY p.id LIMIT \(batchSize)) picked
                -- Rechecked on the row itself: an event another statement batched meanwhile stays in its batch.
                WHERE e.id = picked.id AND e.batch_id IS NULL
                RETURNING e.batch_id
            )
            SELECT DISTINCT batch_id FROM carried
            """,
            logger: logger
        ).count()
    }

    /// Claims up to `limit` ready batches of active webhooks for `lease`, with their events.
    public func claim(limit: Int, lease: Duration) async throws -> [ClaimedWebhookBatch] {
        let leaseSeconds = lease.seconds
        let rows = try await client.query(
            """
            WITH ready AS (
                SELECT b.id FROM webhook_batches b JOIN webhooks w ON w.id = b.webhook_id
                WHERE b.state IN ('available', 'retrying') AND b.run_at <= now() AND w.state = 'active'
                ORDER BY b.run_at
                LIMIT \(limit)
                FOR UPDATE OF b SKIP LOCKED
            )
            UPDATE webhook_batches b SET state = 'running', attempts = b.attempts + 1,
                locked_until = now() + make_interval(secs => \(leaseSeconds)), updated_at = now()
            FROM ready, webhooks w
            WHERE b.id = ready.id AND w.id = b.webhook_id
            RETURNING b.id, b.webhook_id, b.attempts, w.url, w.sealed_secret, w.master_key_id, w.consecutive_failures
            """,
            logger: logger
        )
        var claimed: [(id: Int64, webhookID: Int64, attempt: Int32, url: String, secret: String?, failures: Int32)] = []
        for try await (id, webhookID, attempt, url, sealed, keyID, failures) in rows.decode((Int64, Int64, Int32, String, Data, String?, Int32).self) {
            let secret = try? keys.open(Array(sealed), keyID: keyID, boundTo: WebhookStore.sealingContext(webhookID: webhookID))
            if secret == nil { logger.error("a webhook's secret cannot be opened", metadata: ["webhook_id": "\(webhookID)"]) }
            claimed.append((id, webhookID, attempt, url, secret, failures))
        }
        guard !claimed.isEmpty else { return [] }
        var events: [Int64: (ids: [Int64], texts: [String])] = [:]
        let eventRows = try await client.query(
            """
            SELECT batch_id, id, (jsonb_build_object(
                       'event_id', id, 'type', type,
                       'occurred_at', to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) || payload)::text
            FROM webhook_events WHERE batch_id = ANY(\(claimed.map(\.id))::int8[])
            ORDER BY batch_id, id
            """,
            logger: logger
        )
        for try await (batchID, id, text) in eventRows.decode((Int64, Int64, String).self) {
            events[batchID, default: ([], [])].ids.append(id)
            events[batchID, default: ([], [])].texts.append(text)
        }
        var batches: [ClaimedWebhookBatch] = []
        for batch in claimed {
            guard let carried = events[batch.id] else {
                // Only possible when a batch lost all its events to a concurrent statement: nothing to send.
                try await client.query("DELETE FROM webhook_batches WHERE id = \(batch.id) AND attempts = \(batch.attempt)", logger: logger)
                continue
            }
            batches.append(
                ClaimedWebhookBatch(
                    id: batch.id, webhookID: batch.webhookID, attempt: Int(batch.attempt), url: batch.url, secret: batch.secret,
                    consecutiveFailures: Int(batch.failures), eventIDs: carried.ids,
                    body: Array("{\"events\":[\(carried.texts.joined(separator: ","))]}".utf8)
                ))
        }
        return batches
    }

    /// The receiver took the batch: it is delivered, and the webhook's failure count starts again.
    public func recordDelivered(_ batch: ClaimedWebhookBatch, status: Int) async throws {
        try await client.query(
            """
            WITH batch AS (
                UPDATE webhook_batches SET state = 'delivered', locked_until = NULL, last_status = \(Int32(status)), last_error = NULL,
                    delivered_at = now(), updated_at = now()
                WHERE id = \(batch.id) AND attempts = \(Int32(batch.attempt)) AND state = 'running'
                RETURNING webhook_id
            )
            UPDATE webhooks w SET consecutive_failures = 0, updated_at = now()
            FROM batch WHERE w.id = batch.webhook_id AND w.consecutive_failures <> 0
            """,
            logger: logger
        )
    }

    /// The attempt failed: the batch waits until `runAt`, and the webhook is paused once
    /// `pauseAfter` attempts in a row have failed. Answers whether this paused it.
    @discardableResult
    public func recordFailed(_ batch: ClaimedWebhookBatch, status: Int?, error: String, runAt: Date, pauseAfter: Int) async throws -> Bool {
        let reason = "\(pauseAfter) attempts in a row failed; the last: \(error)"
        let rows = try await client.query(
            """
            WITH batch AS (
                UPDATE webhook_batches SET state = 'retrying', locked_until = NULL, run_at = to_timestamp(\(runAt.timeIntervalSince1970)),
                    last_status = \(status.map(Int32.init)), last_error = \(error), updated_at = now()
                WHERE id = \(batch.id) AND attempts = \(Int32(batch.attempt)) AND state = 'running'
                RETURNING webhook_id
            ), counted AS (
                SELECT w.id, w.consecutive_failures + 1 AS failures, w.state = 'active' AND w.consecutive_failures + 1 >= \(Int32(pauseAfter)) AS pausing
                FROM webhooks w JOIN batch ON w.id = batch.webhook_id
            )
            UPDATE webhooks w SET consecutive_failures = c.failures,
                state = CASE WHEN c.pausing THEN 'paused' ELSE w.state END,
                paused_at = CASE WHEN c.pausing THEN now() ELSE w.paused_at END,
                paused_reason = CASE WHEN c.pausing THEN \(reason) ELSE w.paused_reason END,
                updated_at = now()
            FROM counted c WHERE w.id = c.id
            RETURNING c.pausing
            """,
            logger: logger
        )
        for try await pausing in rows.decode(Bool.self) { return pausing }
        return false
    }

    /// Deletes up to `limit` batches delivered more than `retention` ago, with their events
    /// (operators read recent batches; nothing waits on old ones).
    @discardableResult
    public func pruneDelivered(retention: Duration, limit: Int = 1000) async throws -> Int {
        let seconds = Double(retention.components.seconds)
        return try await client.query(
            """
            DELETE FROM webhook_batches WHERE id IN (
                SELECT id FROM webhook_batches
                WHERE state = 'delivered' AND delivered_at < now() - make_interval(secs => \(seconds))
                ORDER BY id LIMIT \(limit)
            )
            RETURNING id
            """,
            logger: logger
        ).count()
    }

    /// Returns batches whose worker died mid-attempt to the queue (not counted as the
    /// receiver's failure: it may never have seen them).
    @discardableResult
    public func rescueExpiredLeases() async throws -> Int {
        try await client.query(
            """
            UPDATE webhook_batches SET state = 'retrying', locked_until = NULL, updated_at = now(),
                last_error = 'the worker sending it stopped before recording an answer'
            WHERE state = 'running' AND locked_until < now()
            RETURNING id
            """,
            logger: logger
        ).count()
    }
}
