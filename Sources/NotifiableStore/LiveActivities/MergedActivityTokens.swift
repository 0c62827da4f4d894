import Logging
import PostgresNIO

/// The Live Activity tokens of a device merged into the one that took its token (`DeviceStore`):
/// they are the same phone's, so they move to the survivor, which keeps its own where it has one for
/// the same activity or attributes type (its registration is the newer). Moved before the merged
/// row's waiting events move (`MergedDeliveries`), so the next event finds them on the survivor.
enum MergedActivityTokens {
    static func move(from mergedID: Int64, to survivorID: Int64, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            UPDATE live_activity_tokens t SET device_id = \(survivorID), updated_at = now()
            WHERE t.device_id = \(mergedID)
              AND NOT EXISTS (SELECT 1 FROM live_activity_tokens s
                              WHERE s.app_id = t.app_id AND s.activity_id = t.activity_id AND s.device_id = \(survivorID))
            """,
            logger: logger
        )
        try await connection.query(
            """
            UPDATE push_to_start_tokens p SET device_id = \(survivorID), updated_at = now()
            WHERE p.device_id = \(mergedID)
              AND NOT EXISTS (SELECT 1 FROM push_to_start_tokens s WHERE s.device_id = \(survivorID) AND s.attributes_type = p.attributes_type)
            """,
            logger: logger
        )
        // What stays behind is superseded by the survivor's own.
        try await connection.query("DELETE FROM live_activity_tokens WHERE device_id = \(mergedID)", logger: logger)
        try await connection.query("DELETE FROM push_to_start_tokens WHERE device_id = \(mergedID)", logger: logger)
    }
}
