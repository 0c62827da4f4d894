import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// The deliveries table used as a queue, as workers use it: claim with `FOR UPDATE SKIP LOCKED`
/// and a lease, keep leases of batches in flight, record outcomes in batches
/// (DeliveryQueueStore+Record), rescue expired leases and expire overdue work. Operators' operations
/// are QueueAdminStore's.
public struct DeliveryQueueStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Claims up to `limit` ready deliveries for `lease`, shared equally among the apps that have
    /// any, `high` before `normal` within each (a tenth kept for `normal`). Ready deliveries whose notification
    /// was cancelled, or whose device was unregistered, invalidated or merged away since they
    /// were queued, are settled as `cancelled` in the same statement and not returned.
    public func claim(limit: Int, lease: Duration) async throws -> [ClaimedDelivery] {
        let leaseSeconds = lease.seconds
        // The statement, and its fairness, is claim_deliveries (Queue/SQL/claim_deliveries.sql).
        // Acted on only once committed: a claim the database then loses (a primary dying while
        // its synchronous standby confirms) must not be sent, or another worker sends it again.
        let rows = try await client.committing(
            """
            SELECT id, state, notification_id, app_id, device_id, attempts, provider, token, language, country,
                   expires_at, sandbox, kind, platform, apns_environment, badge, content
            FROM claim_deliveries(\(Int32(clamping: limit)), \(leaseSeconds))
            """,
            logger: logger
        )
        var claimed: [ClaimedDelivery] = []
        var unreadable: [DeliveryResult] = []
        var contents: [Int64: (NotificationContent, RenderedPayloads)] = [:]
        for row in rows {
            // The content, last, is read only for the first row of each notification.
            let (
                id, state, notificationID, appID, deviceID, attempt, provider, token, language, country, expiresAt, sandbox, kind, platform, environment, badge
            ) =
                try row.decode(
                    (Int64, String, Int64, Int64, Int64, Int32, String, String, String?, String?, Date?, Bool, String, String?, String?, Int32?).self)
            guard state == DeliveryState.running.rawValue else { continue }
            // One unreadable notification must not hold the rest of the batch until its lease runs out.
            // Sync signals carry content of their own; pushes share their notification's.
            let cached = kind == "push" ? contents[notificationID] : nil
            guard let (content, rendered) = cached ?? Self.content(of: row).map({ ($0, RenderedPayloads()) }),
                let provider = Provider(rawValue: provider)
            else {
                logger.error("stored notification content is unreadable", metadata: ["notification_id": "\(notificationID)"])
                let decision = DeliveryDecision.unreadableContent
                unreadable.append(DeliveryResult(deliveryID: id, attempt: Int(attempt), state: decision.state, reason: decision.reason))
                continue
            }
            if kind == "push" { contents[notificationID] = (content, rendered) }
            claimed.append(
                ClaimedDelivery(
                    id: id, notificationID: notificationID, appID: appID, deviceID: deviceID, attempt: Int(attempt),
                    provider: provider, token: token, language: language, country: country,
                    content: content, expiresAt: expiresAt, sandbox: sandbox, rendered: rendered,
                    platform: platform.flatMap(DevicePlatform.init(rawValue:)),
                    apnsEnvironment: environment.flatMap(APNsEnvironment.init(rawValue:)), badge: badge.map(Int.init)
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

    /// Extends the lease of deliveries a worker is still sending (those still running under the
    /// claim it made), so that a slow gateway or a busy machine does not hand them to another
    /// worker to be pushed twice. Answers the ids extended: the worker no longer holds the others
    /// (their lease ran out and they were rescued, or settled by someone else). Rows another
    /// statement holds (the batch's own record, a rescue) are skipped rather than waited for, so a
    /// renewal never deadlocks with the record of the same batch.
    @discardableResult
    public func extendLeases(_ claimed: [ClaimedDelivery], lease: Duration) async throws -> Set<Int64> {
        guard !claimed.isEmpty else { return [] }
        let leaseSeconds = lease.seconds
        // Believed once committed, like a claim: a renewal a failover loses must not extend a lease.
        let rows = try await client.committing(
            """
            UPDATE deliveries q SET locked_until = now() + make_interval(secs => \(leaseSeconds))
            FROM (
                SELECT d.id, d.day
                FROM deliveries d
                JOIN unnest(\(claimed.map(\.id))::int8[], \(claimed.map { Int32($0.attempt) })::int4[]) AS r(id, attempt)
                  ON d.id = r.id AND d.attempts = r.attempt
                WHERE d.id = ANY(\(claimed.map(\.id))::int8[])
                  AND d.day = ANY(\(DeliveryPartitions.days(of: claimed.map(\.id)))::int4[])
                  AND d.state = 'running'
                FOR UPDATE OF d SKIP LOCKED
            ) held
            WHERE q.id = held.id AND q.day = held.day
            RETURNING q.id
            """,
            logger: logger
        )
        return Set(try rows.map { try $0.decode(Int64.self) })
    }

    /// Returns deliveries whose lease ran out (their worker died or stalled) to the queue, or
    /// gives them up, as `DeliveryDecision.afterLeaseRanOut` decides for each. Its worker may have
    /// sent it: an attempt of unknown outcome; that worker's record, should it come late, is ignored.
    @discardableResult
    public func rescueExpiredLeases(policy: RetryPolicy, now: Date = Date()) async throws -> Int {
        // Nothing runs below the floor; naming it spares planning every older day.
        let floor = try await DeliveryPartitions.queueFloor(on: client, logger: logger)
        return try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                SELECT id, day, attempts, reason FROM deliveries
                WHERE state = 'running' AND locked_until < now() AND day >= \(floor)
                LIMIT 10000 FOR UPDATE SKIP LOCKED
                """,
                logger: logger
            )
            var ids: [Int64] = [], days: [Int32] = [], states: [String] = [], reasons: [String] = []
            for try await (id, day, attempts, reason) in rows.decode((Int64, Int32, Int32, String?).self) {
                let decision = DeliveryDecision.afterLeaseRanOut(attempts: Int(attempts), previousReason: reason, policy: policy, now: now)
                ids.append(id)
                days.append(day)
                states.append(decision.state.rawValue)
                reasons.append(decision.reason ?? "")
            }
            guard !ids.isEmpty else { return 0 }
            try await connection.query(
                """
                UPDATE deliveries q SET state = r.state, dead_at = CASE WHEN r.state = 'dead' THEN now() END, reason = r.reason,
                    unknown_outcomes = q.unknown_outcomes + 1, locked_until = NULL, run_at = now(), updated_at = now()
                FROM unnest(\(ids)::int8[], \(days)::int4[], \(states)::text[], \(reasons)::text[]) AS r(id, day, state, reason)
                WHERE q.id = r.id AND q.day = r.day AND q.day = ANY(\(Array(Set(days)))::int4[])
                """,
                logger: logger
            )
            return ids.count
        }
    }

    /// Moves the queue's floor up past the days with nothing left waiting or running, so that
    /// claims plan and read only the days that can hold work (Migrations/0017).
    @discardableResult
    public func raiseFloor() async throws -> Int32 {
        try await DeliveryPartitions.raiseQueueFloor(on: client, logger: logger)
    }

    /// Settles waiting deliveries of expired notifications as `DeliveryDecision.expired` says.
    @discardableResult
    public func expireOverdue() async throws -> Int {
        let floor = try await DeliveryPartitions.queueFloor(on: client, logger: logger)
        let rows = try await client.query(
            """
            UPDATE deliveries q SET state = \(DeliveryDecision.expired.state.rawValue), dead_at = now(), updated_at = now(), reason = \(DeliveryDecision.expired.reason)
            FROM notifications n
            WHERE n.id = q.notification_id AND COALESCE(q.expires_at, n.expires_at) <= now() AND q.state IN \(unescaped: DeliveryStateList.waiting)
              AND q.day >= \(floor)
            RETURNING q.id
            """,
            logger: logger
        )
        return try await rows.count()
    }
}
