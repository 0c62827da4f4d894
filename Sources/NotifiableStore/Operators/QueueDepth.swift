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
    /// How far behind its primary the server that answered is: 0 for a primary, and for a
    /// standby that has replayed all it received (an idle primary sends nothing to replay).
    public var replicaLagSeconds: Double = 0

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
                \(unescaped: Self.replicaLag)
            FROM deliveries WHERE state IN \(unescaped: DeliveryStateList.waiting)
            """,
            logger: logger
        )
        var depth = QueueDepth()
        for try await (available, retrying, age, running, dead, fanningOut, lag) in rows.decode(
            (Int64, Int64, Double, Int64, Int64, Int64, Double).self
        ) {
            depth = QueueDepth(
                available: available, retrying: retrying, running: running, dead: dead,
                oldestReadyAgeSeconds: max(0, age), fanningOut: fanningOut
            )
            depth.replicaLagSeconds = max(0, lag)
        }
        depth.misconfigured = Dictionary(uniqueKeysWithValues: Provider.allCases.map { ($0, 0) })
        let misconfigured = try await client.query(
            """
            SELECT provider, count(*) FROM (\(unescaped: GatewaySettingsTable.everyProvidersSettings)) AS s
            WHERE misconfiguration_reason IS NOT NULL GROUP BY provider
            """,
            logger: logger)
        for try await (name, count) in misconfigured.decode((String, Int64).self) {
            if let provider = Provider(rawValue: name) { depth.misconfigured[provider] = count }
        }
        return depth
    }

    /// Seconds the answering server is behind its primary, as an expression.
    static let replicaLag = """
        (CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
              ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0) END)::float8
        """

    /// How far behind its primary the server this store reads is (see `QueueDepth.replicaLagSeconds`).
    public func replicaLagSeconds() async throws -> Double {
        for try await lag in try await client.query("SELECT \(unescaped: Self.replicaLag)", logger: logger).decode(Double.self) {
            return max(0, lag)
        }
        return 0
    }
}
