import Foundation
import Logging
import PostgresNIO

/// The day partitions of `deliveries` (migration 0017): each holds the deliveries of the
/// notifications sent on one UTC day, and the sync signals queued on it.
public enum DeliveryPartitions {
    /// How many days past today get their partition ahead of time, so that no insert waits for
    /// one to be made.
    public static let daysAhead = 2

    /// Creates the partition of `day` (days since 1970-01-01, UTC) unless it exists.
    public static func create(day: Int32, on client: Database, logger: Logger) async throws {
        try await client.query("SELECT create_delivery_partition(\(day))", logger: logger)
    }

    /// Creates today's partition and those of the next `daysAhead` days, where missing.
    public static func createAhead(on client: Database, logger: Logger) async throws {
        try await client.query(
            """
            SELECT create_delivery_partition(d)
            FROM generate_series(delivery_day(now()), delivery_day(now()) + \(Int32(daysAhead))) AS d
            """,
            logger: logger
        )
    }

    /// Moves the queue's floor up past the days with nothing waiting or running, so that claims
    /// read fewer days; answers the floor.
    @discardableResult
    public static func raiseQueueFloor(on client: Database, logger: Logger) async throws -> Int32 {
        var floor: Int32 = 0
        for try await day in try await client.query("SELECT raise_delivery_queue_floor()", logger: logger).decode(Int32.self) {
            floor = day
        }
        return floor
    }

    /// The queue's floor: no delivery of an earlier day waits or runs.
    public static func queueFloor(on client: Database, logger: Logger) async throws -> Int32 {
        try await firstDay(of: client.query(floorQuery, logger: logger))
    }

    /// The same, in a caller's transaction. Work made waiting below this floor by a transaction
    /// still open is not seen, as no uncommitted delivery ever was.
    static func queueFloor(on connection: PostgresConnection, logger: Logger) async throws -> Int32 {
        try await firstDay(of: connection.query(floorQuery, logger: logger))
    }

    private static let floorQuery: PostgresQuery = "SELECT day FROM delivery_queue_floor"

    private static func firstDay(of rows: PostgresRowSequence) async throws -> Int32 {
        for try await day in rows.decode(Int32.self) { return day }
        return 0
    }

    /// The days of the given deliveries (the top 32 bits of each id), for statements that name
    /// them so the planner reads only their partitions. Such statements name the ids as an array
    /// too (`q.id = ANY(ids)`), not only in a join: a day not analyzed yet has no statistics, and
    /// the planner would rather read the whole day than probe it row by row.
    public static func days(of ids: some Sequence<Int64>) -> [Int32] {
        Set(ids.map { Int32(truncatingIfNeeded: $0 >> 32) }).sorted()
    }

    /// The days that hold the given notifications' pushes: each notification's own day, and day 0
    /// (the legacy partition) for pushes made before partitioning. Statements about a
    /// notification's pushes name them, so that the planner reads two partitions, not a month of
    /// them (planning a status event took 3.4 ms over 40 days, 0.2 ms over one).
    public static func pushDays(ofNotifications ids: [Int64], on client: Database, logger: Logger) async throws -> [Int32] {
        var days: Set<Int32> = [0]
        for try await day in try await client.query(
            "SELECT delivery_day(COALESCE(fanout_after, created_at)) FROM notifications WHERE id = ANY(\(ids)::int8[])", logger: logger
        ).decode(Int32.self) {
            days.insert(day)
        }
        return days.sorted()
    }

    /// The name of a day's partition, as `delivery_partition_name()` makes it: `deliveries_2026_11_25`.
    public static func name(ofDay day: Int32) -> String {
        "deliveries_" + dayFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(day) * 86_400))
    }

    /// The day a partition's name says, nil for the legacy partition.
    public static func day(ofPartitionNamed name: String) -> Int32? {
        dayFormatter().date(from: String(name.dropFirst("deliveries_".count))).map(\.deliveryDay)
    }

    private static func dayFormatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy_MM_dd"
        return formatter
    }

    /// The partitions, oldest first.
    public static func list(on client: Database, logger: Logger) async throws -> [DeliveryPartition] {
        var partitions: [DeliveryPartition] = []
        for try await (name, first, end) in try await client.query(
            "SELECT name, first_day, end_day FROM delivery_partitions()", logger: logger
        ).decode((String, Int32?, Int32).self) {
            partitions.append(DeliveryPartition(name: name, firstDay: first, endDay: end))
        }
        return partitions
    }
}

/// One partition of `deliveries`: the days `firstDay ..< endDay` (no first day for the legacy
/// partition, which holds every delivery made before partitioning, as day 0).
public struct DeliveryPartition: Sendable, Equatable {
    public let name: String
    public let firstDay: Int32?
    public let endDay: Int32

    public init(name: String, firstDay: Int32?, endDay: Int32) {
        self.name = name
        self.firstDay = firstDay
        self.endDay = endDay
    }

    public var isLegacy: Bool { firstDay == nil }
}

extension Date {
    /// The day since 1970-01-01 (UTC) this moment falls on, as `delivery_day()` counts them.
    public var deliveryDay: Int32 { Int32((timeIntervalSince1970 / 86_400).rounded(.down)) }
}
