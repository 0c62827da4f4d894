import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// What became of one claimed delivery.
public struct DeliveryResult: Sendable, Equatable {
    public enum State: String, Sendable {
        case sent, retrying, failed, dead
    }

    public let deliveryID: Int64
    public let attempt: Int
    public let state: State
    /// When to try again (retrying only).
    public let runAt: Date?
    public let reason: String?
    public let gatewayStatus: Int?
    public let gatewayID: String?
    /// Sent to the built-in fake gateway of an app in sandbox mode.
    public let sandbox: Bool
    /// What that gateway received, when it kept it.
    public let sandboxPush: SandboxPush?

    public init(deliveryID: Int64, attempt: Int, state: State, runAt: Date? = nil, reason: String? = nil,
                gatewayStatus: Int? = nil, gatewayID: String? = nil, sandbox: Bool = false, sandboxPush: SandboxPush? = nil) {
        self.sandbox = sandbox || sandboxPush != nil
        self.sandboxPush = sandboxPush
        self.deliveryID = deliveryID
        self.attempt = attempt
        self.state = state
        self.runAt = runAt
        self.reason = reason
        self.gatewayStatus = gatewayStatus
        self.gatewayID = gatewayID
    }
}

/// Queue depth for operators.
public struct QueueStats: Sendable, Equatable {
    public var counts: [String: Int64] = [:]
    /// Seconds the oldest ready delivery has waited past its run time; 0 when none is ready.
    public var oldestReadyAgeSeconds: Double = 0
    public var fanningOut: Int64 = 0
}

/// The deliveries table used as a queue: claim with `FOR UPDATE SKIP LOCKED` and a lease,
/// record outcomes in batches, rescue expired leases, and let operators re-queue dead work.
public struct DeliveryQueue: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Claims up to `limit` ready deliveries for `lease`. Ready deliveries whose notification
    /// was cancelled, or whose device was unregistered, invalidated or merged away since they
    /// were queued, are settled as `cancelled` in the same statement and not returned.
    public func claim(limit: Int, lease: Duration) async throws -> [ClaimedDelivery] {
        let leaseSeconds = Double(lease.components.seconds) + Double(lease.components.attoseconds) / 1e18
        // The statement lives in Migrations/0010_claim_deliveries.sql, which says why.
        let rows = try await client.query(
            """
            SELECT id, state, notification_id, app_id, device_id, attempts, provider, token, language, country,
                   expires_at, sandbox, kind, content
            FROM claim_deliveries(\(Int32(clamping: limit)), \(leaseSeconds))
            """,
            logger: logger
        )
        var claimed: [ClaimedDelivery] = []
        var unreadable: [DeliveryResult] = []
        var contents: [Int64: (NotificationContent, RenderedPayloads)] = [:]
        for try await row in rows {
            // The content, last, is read only for the first row of each notification.
            let (id, state, notificationID, appID, deviceID, attempt, provider, token, language, country, expiresAt, sandbox, kind) =
                try row.decode((Int64, String, Int64, Int64, Int64, Int32, String, String, String?, String?, Date?, Bool, String).self)
            guard state == DeliveryState.running.rawValue else { continue }
            // One unreadable notification must not hold the rest of the batch until its lease runs out.
            // Sync signals carry content of their own; pushes share their notification's.
            let cached = kind == "push" ? contents[notificationID] : nil
            guard let (content, rendered) = cached ?? Self.content(of: row).map({ ($0, RenderedPayloads()) }),
                  let provider = Provider(rawValue: provider)
            else {
                logger.error("stored notification content is unreadable", metadata: ["notification_id": "\(notificationID)"])
                unreadable.append(DeliveryResult(deliveryID: id, attempt: Int(attempt), state: .failed, reason: "stored notification content is unreadable"))
                continue
            }
            if kind == "push" { contents[notificationID] = (content, rendered) }
            claimed.append(ClaimedDelivery(
                id: id, notificationID: notificationID, appID: appID, deviceID: deviceID, attempt: Int(attempt),
                provider: provider, token: token, language: language, country: country,
                content: content, expiresAt: expiresAt, sandbox: sandbox, rendered: rendered
            ))
        }
        try await record(unreadable)
        return claimed
    }

    /// A claimed row's content (its last column), or nil when it cannot be read.
    private static func content(of row: PostgresRow) -> NotificationContent? {
        guard let cell = Array(row).last, let text = try? cell.decode(String.self) else { return nil }
        return try? StoredJSON.decode(NotificationContent.self, from: text)
    }

    /// Records outcomes in one statement. A result whose attempt no longer matches the row
    /// (the lease expired and another worker claimed it) is ignored.
    public func record(_ results: [DeliveryResult]) async throws {
        guard !results.isEmpty else { return }
        let sandboxed = results.filter { $0.sandboxPush != nil }
        guard !sandboxed.isEmpty else {
            try await client.query(Self.recordQuery(results), logger: logger)
            return
        }
        // A sandbox push is listed exactly when its delivery is recorded sent.
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query(Self.recordQuery(results), logger: logger)
            try await SandboxPushes.insert(sandboxed, on: connection, logger: logger)
        }
    }

    private static func recordQuery(_ results: [DeliveryResult]) -> PostgresQuery {
        """
        UPDATE deliveries q SET
            state = r.state,
            locked_until = NULL,
            updated_at = now(),
            run_at = CASE WHEN r.run_at < 0 THEN q.run_at ELSE to_timestamp(r.run_at) END,
            reason = COALESCE(NULLIF(r.reason, ''), CASE WHEN r.state = 'sent' THEN NULL ELSE q.reason END),
            gateway_status = NULLIF(r.gateway_status, 0),
            gateway_id = COALESCE(NULLIF(r.gateway_id, ''), q.gateway_id),
            sandbox = r.sandbox,
            sent_at = CASE WHEN r.state = 'sent' THEN clock_timestamp() ELSE q.sent_at END,
            failed_at = CASE WHEN r.state = 'failed' THEN now() ELSE q.failed_at END,
            dead_at = CASE WHEN r.state = 'dead' THEN now() ELSE q.dead_at END
        FROM unnest(\(results.map(\.deliveryID))::int8[], \(results.map { Int32($0.attempt) })::int4[],
                    \(results.map(\.state.rawValue))::text[],
                    \(results.map { $0.runAt?.timeIntervalSince1970 ?? -1 })::float8[],
                    \(results.map { $0.reason ?? "" })::text[], \(results.map { Int32($0.gatewayStatus ?? 0) })::int4[],
                    \(results.map { $0.gatewayID ?? "" })::text[], \(results.map(\.sandbox))::bool[])
             AS r(id, attempt, state, run_at, reason, gateway_status, gateway_id, sandbox)
        WHERE q.id = r.id AND q.attempts = r.attempt AND q.state = 'running'
        """
    }

    /// Marks a device's token dead, unless the device registered again after `at` (a gateway
    /// verdict older than the registration is stale) or no longer holds `token` (the app
    /// rotated its token while the push to the old one was in flight). Its other waiting
    /// deliveries are cancelled.
    @discardableResult
    public func invalidateDevice(id: Int64, token: String, reason: String, at: Date?) async throws -> Bool {
        try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE devices SET invalidated_at = now(), invalidation_reason = \(reason), updated_at = now()
                WHERE id = \(id) AND lower(token) = lower(\(token)) AND invalidated_at IS NULL
                  AND (\(at)::timestamptz IS NULL OR registered_at < \(at)::timestamptz)
                RETURNING id
                """,
                logger: logger
            )
            let invalidated = try await rows.count() > 0
            if invalidated {
                try await WaitingDeliveries.cancel(
                    of: .device(id), reason: "device token invalid: \(reason)", on: connection, logger: logger
                )
            }
            return invalidated
        }
    }

    /// Extends the lease of deliveries a worker is still sending (those still running under the
    /// claim it made), so that a slow gateway or a busy machine does not hand them to another
    /// worker to be pushed twice. Answers how many were extended.
    @discardableResult
    public func extendLeases(_ claimed: [ClaimedDelivery], lease: Duration) async throws -> Int {
        guard !claimed.isEmpty else { return 0 }
        let leaseSeconds = Double(lease.components.seconds) + Double(lease.components.attoseconds) / 1e18
        return try await client.query(
            """
            UPDATE deliveries q SET locked_until = now() + make_interval(secs => \(leaseSeconds))
            FROM unnest(\(claimed.map(\.id))::int8[], \(claimed.map { Int32($0.attempt) })::int4[]) AS r(id, attempt)
            WHERE q.id = r.id AND q.attempts = r.attempt AND q.state = 'running'
            RETURNING q.id
            """,
            logger: logger
        ).count()
    }

    /// Returns deliveries whose lease ran out (their worker died or stalled) to the queue,
    /// or to `dead` when they have had `maxAttempts` claims already.
    @discardableResult
    public func rescueExpiredLeases(maxAttempts: Int) async throws -> Int {
        let rows = try await client.query(
            """
            UPDATE deliveries SET
                state = CASE WHEN attempts >= \(maxAttempts) THEN 'dead' ELSE 'retrying' END,
                dead_at = CASE WHEN attempts >= \(maxAttempts) THEN now() END,
                reason = COALESCE(reason, 'worker lease expired'),
                locked_until = NULL, run_at = now(), updated_at = now()
            WHERE id IN (
                SELECT id FROM deliveries WHERE state = 'running' AND locked_until < now()
                LIMIT 10000 FOR UPDATE SKIP LOCKED
            )
            RETURNING id
            """,
            logger: logger
        )
        return try await rows.count()
    }

    /// Settles waiting deliveries of expired notifications as dead: they can no longer be sent.
    @discardableResult
    public func expireOverdue() async throws -> Int {
        let rows = try await client.query(
            """
            UPDATE deliveries q SET state = 'dead', dead_at = now(), updated_at = now(), reason = 'notification expired'
            FROM notifications n
            WHERE n.id = q.notification_id AND COALESCE(q.expires_at, n.expires_at) <= now() AND q.state IN ('available', 'retrying')
            RETURNING q.id
            """,
            logger: logger
        )
        return try await rows.count()
    }

    public func stats() async throws -> QueueStats {
        var stats = QueueStats()
        for try await (state, count) in try await client.query(
            "SELECT state, count(*) FROM deliveries GROUP BY state", logger: logger
        ).decode((String, Int64).self) {
            stats.counts[state] = count
        }
        for try await age in try await client.query(
            """
            SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(run_at)), 0)::float8
            FROM deliveries WHERE state IN ('available', 'retrying') AND run_at <= now()
            """,
            logger: logger
        ).decode(Double.self) {
            stats.oldestReadyAgeSeconds = max(0, age)
        }
        for try await count in try await client.query(
            "SELECT count(*) FROM notifications WHERE state = 'fanning_out'", logger: logger
        ).decode(Int64.self) {
            stats.fanningOut = count
        }
        return stats
    }

    /// Dead deliveries, oldest first, after `afterID`; of one app when given.
    public func dead(appID: Int64?, afterID: Int64?, limit: Int) async throws -> [DeliveryRecord] {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.recordColumns)
            FROM deliveries q JOIN devices d ON d.id = q.device_id
            WHERE q.state = 'dead' AND q.id > \(afterID ?? 0) AND (\(appID)::int8 IS NULL OR q.app_id = \(appID)::int8)
            ORDER BY q.id LIMIT \(limit)
            """,
            logger: logger
        )
        var records: [DeliveryRecord] = []
        for try await row in rows { records.append(try Self.record(from: row)) }
        return records
    }

    /// Puts dead deliveries back in the queue with a fresh attempt budget: those named, or all
    /// of the app's (or everyone's) when none are named. Deliveries to devices that are gone
    /// or invalid stay dead, and so do sync signals: a newer state may have replaced theirs, and
    /// the device catches up from its change feed. Returns how many were re-queued.
    public func requeueDead(appID: Int64?, ids: [Int64]?) async throws -> Int {
        let rows = try await client.query(
            """
            UPDATE deliveries q SET state = 'available', attempts = 0, run_at = now(), updated_at = now(), dead_at = NULL
            FROM devices d, notifications n
            WHERE q.state = 'dead' AND q.kind = 'push' AND d.id = q.device_id AND n.id = q.notification_id
              AND d.unregistered_at IS NULL AND d.invalidated_at IS NULL
              AND (q.kind = 'sync' OR n.state <> 'cancelled')
              AND (COALESCE(q.expires_at, n.expires_at) IS NULL OR COALESCE(q.expires_at, n.expires_at) > now())
              AND (\(appID)::int8 IS NULL OR q.app_id = \(appID)::int8)
              AND (\(ids)::int8[] IS NULL OR q.id = ANY(\(ids)::int8[]))
            RETURNING q.id
            """,
            logger: logger
        )
        let count = try await rows.count()
        if count > 0 { await wakeWorkers(client, logger: logger) }
        return count
    }

    static let recordColumns = """
        q.id, q.notification_id, q.device_id, d.user_alias, d.provider, q.state, q.attempts, q.reason,
        q.gateway_status, q.gateway_id, q.run_at, q.created_at, q.sent_at, q.failed_at, q.dead_at,
        q.cancelled_at, q.delivered_at, q.opened_at, q.sandbox, q.kind
        """

    static func record(from row: PostgresRow) throws -> DeliveryRecord {
        let (id, notificationID, deviceID, alias, provider, state, attempts, reason, status, gatewayID,
             runAt, createdAt, sentAt, failedAt, deadAt, cancelledAt, deliveredAt, openedAt, sandbox, kind) = try row.decode(
            (Int64, Int64, Int64, String?, String, String, Int32, String?, Int32?, String?,
             Date, Date, Date?, Date?, Date?, Date?, Date?, Date?, Bool, String).self
        )
        return DeliveryRecord(
            id: id, notificationID: notificationID, deviceID: deviceID, userAlias: alias,
            provider: Provider(rawValue: provider) ?? .apns, state: state, attempts: Int(attempts), reason: reason,
            gatewayStatus: status.map(Int.init), gatewayID: gatewayID, runAt: runAt, createdAt: createdAt,
            sentAt: sentAt, failedAt: failedAt, deadAt: deadAt, cancelledAt: cancelledAt,
            deliveredAt: deliveredAt, openedAt: openedAt, sandbox: sandbox, kind: kind
        )
    }
}
