import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// What the workers do for broadcast channels (`ActivityChannelStage`): lease the channels to make
/// or delete at Apple and record Apple's answer, and lease and record the broadcasts to send.
public struct ActivityChannelStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Leases up to `limit` channels to make or delete. A channel is deleted only once no broadcast
    /// of its activity waits or is being sent: its end reaches the devices first.
    public func claimWork(limit: Int, lease: Duration) async throws -> [ActivityChannelWork] {
        let rows = try await client.query(
            """
            UPDATE live_activities a SET channel_locked_until = now() + make_interval(secs => \(Double(lease.components.seconds))),
                   channel_claims = a.channel_claims + 1
            FROM apps p
            WHERE p.id = a.app_id AND a.id IN (
                SELECT w.id FROM live_activities w
                WHERE w.channel_state IN ('requested', 'closing') AND w.channel_run_at <= now()
                  AND (w.channel_locked_until IS NULL OR w.channel_locked_until < now())
                  AND (w.channel_state = 'requested' OR NOT EXISTS (
                      SELECT 1 FROM activity_broadcasts b
                      WHERE b.app_id = w.app_id AND b.activity_id = w.activity_id AND b.state IN ('available', 'retrying', 'running')))
                ORDER BY w.channel_run_at LIMIT \(limit)
                FOR UPDATE SKIP LOCKED)
            RETURNING a.id, a.app_id, a.activity_id, a.channel_state, a.channel_id, a.channel_message_storage, a.channel_attempts,
                      a.channel_claims, p.delivery_mode = 'sandbox'
            """,
            logger: logger
        )
        var work: [ActivityChannelWork] = []
        for try await (id, appID, activityID, state, channelID, storage, attempts, claim, sandbox) in rows.decode(
            (Int64, Int64, String, String, String?, Bool, Int, Int, Bool).self
        ) {
            let action: ActivityChannelWork.Action = state == "requested" ? .create(messageStorage: storage) : .delete(channelID: channelID)
            work.append(
                ActivityChannelWork(id: id, appID: appID, activityID: activityID, action: action, attempts: attempts, claim: claim, sandbox: sandbox))
        }
        return work
    }

    /// Apple made the channel. An activity that ended meanwhile (`closing`, or `closed` when there
    /// was nothing to delete yet) goes to `closing`, so the new channel is deleted next.
    public func created(_ work: ActivityChannelWork, channelID: String) async throws {
        try await client.query(
            """
            UPDATE live_activities SET channel_id = \(channelID), channel_error = NULL, channel_locked_until = NULL, channel_attempts = 0,
                   channel_state = CASE WHEN channel_state = 'requested' THEN 'open' ELSE 'closing' END, channel_run_at = now()
            WHERE id = \(work.id) AND channel_claims = \(work.claim)
            """,
            logger: logger
        )
    }

    /// The channel is gone at Apple (or was never made).
    public func deleted(_ work: ActivityChannelWork) async throws {
        try await client.query(
            """
            UPDATE live_activities SET channel_state = 'closed', channel_locked_until = NULL, channel_error = NULL
            WHERE id = \(work.id) AND channel_state = 'closing' AND channel_claims = \(work.claim)
            """,
            logger: logger
        )
    }

    /// Apple did not answer usefully: the work is tried again at `at`.
    public func retry(_ work: ActivityChannelWork, at: Date, reason: String) async throws {
        try await client.query(
            """
            UPDATE live_activities SET channel_run_at = \(at), channel_error = \(reason), channel_attempts = channel_attempts + 1,
                   channel_locked_until = NULL
            WHERE id = \(work.id) AND channel_claims = \(work.claim)
            """,
            logger: logger
        )
    }

    /// Apple refused to make the channel; asking again tries again. A refused delete leaves the
    /// channel closed here: Apple's limit of channels per app is what it still counts against.
    public func refused(_ work: ActivityChannelWork, reason: String) async throws {
        try await client.query(
            """
            UPDATE live_activities SET channel_error = \(reason), channel_locked_until = NULL,
                   channel_state = CASE WHEN channel_state = 'requested' THEN 'failed' ELSE 'closed' END
            WHERE id = \(work.id) AND channel_claims = \(work.claim)
            """,
            logger: logger
        )
    }

    /// Makes broadcasts whose lease ran out ready again and gives up those past their expiry.
    public func tidyBroadcasts() async throws {
        try await client.withTransaction(logger: logger) { connection in try await ActivityBroadcasts.tidy(on: connection, logger: logger) }
    }

    public func claimBroadcasts(limit: Int, lease: Duration) async throws -> [ClaimedBroadcast] {
        try await client.withTransaction(logger: logger) { connection in
            try await ActivityBroadcasts.claim(limit: limit, lease: lease, on: connection, logger: logger)
        }
    }

    /// Records the decision about a claimed broadcast (`DeliveryDecision`).
    public func record(_ broadcast: ClaimedBroadcast, _ decision: DeliveryDecision, gatewayStatus: Int?) async throws {
        var runAt: Date?
        if case .retry(let at, _) = decision { runAt = at }
        try await client.query(
            ActivityBroadcasts.recording(broadcast, state: decision.state, runAt: runAt, reason: decision.reason, gatewayStatus: gatewayStatus),
            logger: logger)
    }
}
