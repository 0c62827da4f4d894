import NotifiableCore
import NotifiableStore
import PostgresNIO
import Testing

extension TestService {
    /// A notification's counters counted from its deliveries, row by row, as they were counted
    /// before they were kept: what the kept counters must always equal.
    public func recountedCounters(of notificationID: Int64) async throws -> NotificationCounters {
        var counters = NotificationCounters()
        let rows = try await postgres.query(
            """
            SELECT state, count(*)::int8, count(delivered_at)::int8, count(opened_at)::int8
            FROM deliveries WHERE notification_id = \(notificationID) AND kind <> 'sync' GROUP BY state
            """,
            logger: TestDatabase.logger
        )
        for try await (state, count, delivered, opened) in rows.decode((String, Int64, Int64, Int64).self) {
            counters.targeted += count
            counters.delivered += delivered
            counters.opened += opened
            switch DeliveryState(rawValue: state) {
            case .available?, .running?: counters.pending += count
            case .retrying?: counters.retrying += count
            case .sent?: counters.sent += count
            case .failed?: counters.failed += count
            case .dead?: counters.dead += count
            case .cancelled?: counters.cancelled += count
            case nil: Issue.record("a delivery in the unknown state \(state)")
            }
        }
        return counters
    }

    /// The kept counters of a notification, without the latest error (which a recount does not give).
    public func keptCounters(of notificationID: Int64) async throws -> NotificationCounters {
        var counters =
            try await NotificationCounterStore(client: postgres, logger: TestDatabase.logger)
            .counters(notificationIDs: [notificationID])[notificationID] ?? NotificationCounters()
        counters.lastError = nil
        return counters
    }
}
