import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Appends to users' change feeds. Each user's entries are numbered from their `user_feeds`
/// row, whose lock the transaction holds until it commits: a user's changes therefore commit in
/// the order of their numbers, and a reader never sees change n + 1 without change n.
enum UserFeed {
    struct Entry {
        let appID: Int64
        let userAlias: String
        let notificationID: Int64
        let kind: UserNotificationChange.Kind
        let readState: ReadState
        let actionState: UserActionState
        let deviceID: Int64?
    }

    /// Appends the entries, a user's in the order given, and answers each entry's number in
    /// the same order. Feeds are locked in (app, alias) order, so that two transactions
    /// appending for the same users cannot deadlock.
    static func append(_ entries: [Entry], on connection: PostgresConnection, logger: Logger) async throws -> [Int64] {
        guard !entries.isEmpty else { return [] }
        let rows = try await connection.query(
            """
            WITH entry AS (
                SELECT * FROM unnest(\(entries.map(\.appID))::int8[], \(entries.map(\.userAlias))::text[],
                                     \(entries.map(\.notificationID))::int8[], \(entries.map(\.kind.rawValue))::text[],
                                     \(entries.map(\.readState.rawValue))::text[], \(entries.map(\.actionState.rawValue))::text[],
                                     \(entries.map { $0.deviceID ?? 0 })::int8[])
                    WITH ORDINALITY AS e(app_id, user_alias, notification_id, kind, read_state, user_action_state, device_id, ord)
            ),
            per_user AS (
                SELECT app_id, user_alias, count(*) AS added FROM entry GROUP BY app_id, user_alias
            ),
            numbered AS (
                INSERT INTO user_feeds AS f (app_id, user_alias, last_seq)
                SELECT app_id, user_alias, added FROM per_user ORDER BY app_id, user_alias
                ON CONFLICT (app_id, user_alias) DO UPDATE SET last_seq = f.last_seq + excluded.last_seq
                RETURNING app_id, user_alias, last_seq
            ),
            placed AS (
                SELECT e.*, n.last_seq - p.added
                            + row_number() OVER (PARTITION BY e.app_id, e.user_alias ORDER BY e.ord) AS seq
                FROM entry e JOIN per_user p USING (app_id, user_alias) JOIN numbered n USING (app_id, user_alias)
            ),
            inserted AS (
                INSERT INTO user_notification_changes
                    (app_id, user_alias, seq, notification_id, kind, read_state, user_action_state, device_id)
                SELECT app_id, user_alias, seq, notification_id, kind, read_state, user_action_state, NULLIF(device_id, 0)
                FROM placed
            )
            SELECT seq FROM placed ORDER BY ord
            """,
            logger: logger
        )
        var numbers: [Int64] = []
        for try await seq in rows.decode(Int64.self) { numbers.append(seq) }
        return numbers
    }
}
