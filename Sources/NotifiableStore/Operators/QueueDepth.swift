import NotifiableCore
import PostgresNIO

/// Deliveries waiting in each non-final state, for metrics.
public struct QueueDepth: Sendable, Equatable {
    public var available: Int64 = 0
    public var retrying: Int64 = 0
    public var running: Int64 = 0
    public var dead: Int64 = 0
    /// Seconds the oldest ready delivery has waited past its run time; 0 when none is ready.
    public var oldestReadyAgeSeconds: Double = 0
    public var fanningOut: Int64 = 0
    /// Apps whose settings a gateway refused, by provider, until they are saved again.
    public var misconfigured: [Provider: Int64] = [:]

    public init(
        available: Int64 = 0, retrying: Int64 = 0, running: Int64 = 0, dead: Int64 = 0,
        oldestReadyAgeSeconds: Double = 0, fanningOut: Int64 = 0
    ) {
        self.available = available
        self.retrying = retrying
        self.running = running
        self.dead = dead
        self.oldestReadyAgeSeconds = oldestReadyAgeSeconds
        self.fanningOut = fanningOut
    }
}

extension QueueAdminStore {
    /// The waiting part of the queue, for metrics: cheap on a table holding years of history,
    /// because each count reads only rows of a waiting state through its partial index
    /// (`deliveries_waiting_idx`, `deliveries_running_idx`, `deliveries_dead_idx`), never the
    /// sent, failed and cancelled rows that make up most of the table.
    public func depth() async throws -> QueueDepth {
        let rows = try await client.query(
            """
            SELECT
                count(*) FILTER (WHERE state = 'available'),
                count(*) FILTER (WHERE state = 'retrying'),
                COALESCE(EXTRACT(EPOCH FROM now() - min(run_at) FILTER (WHERE run_at <= now())), 0)::float8,
                (SELECT count(*) FROM deliveries WHERE state = 'running'),
                (SELECT count(*) FROM deliveries WHERE state = 'dead'),
                (SELECT count(*) FROM notifications WHERE state = 'fanning_out'),
                (SELECT count(*) FROM apns_settings WHERE misconfiguration_reason IS NOT NULL),
                (SELECT count(*) FROM fcm_settings WHERE misconfiguration_reason IS NOT NULL)
            FROM deliveries WHERE state IN ('available', 'retrying')
            """,
            logger: logger
        )
        var depth = QueueDepth()
        for try await (available, retrying, age, running, dead, fanningOut, apns, fcm) in rows.decode(
            (Int64, Int64, Double, Int64, Int64, Int64, Int64, Int64).self
        ) {
            depth = QueueDepth(
                available: available, retrying: retrying, running: running, dead: dead,
                oldestReadyAgeSeconds: max(0, age), fanningOut: fanningOut
            )
            depth.misconfigured = [.apns: apns, .fcm: fcm]
        }
        return depth
    }
}
