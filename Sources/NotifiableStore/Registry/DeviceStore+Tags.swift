import Logging
import NotifiableCore
import PostgresNIO

extension DeviceStore {
    /// Replaces, or adds to and removes from, the tags of a registered device of the app; nil
    /// when the app has no such device. The row is locked while the new set is worked out, so
    /// two edits at once both count. A set that would pass `DeviceTags.maxCount` is refused
    /// (`field` names the request member at fault) and nothing changes.
    public func changeTags(id: Int64, appID: Int64, _ changes: TagChanges, field: String) async throws -> Device? {
        enum Outcome { case missing, tooMany(Int), changed(Device?) }
        // Thrown inside the transaction, a validation error would come out wrapped in
        // PostgresTransactionError; it leaves as a value and is thrown once the transaction is over.
        let outcome: Outcome = try await client.withTransaction(logger: logger) { connection in
            let held = try await connection.query(
                """
                SELECT tags FROM devices
                WHERE id = \(id) AND app_id = \(appID) AND unregistered_at IS NULL
                FOR UPDATE
                """,
                logger: logger
            )
            var current: [String]?
            for try await tags in held.decode([String].self) { current = tags }
            guard let current else { return .missing }
            let tags = changes.applied(to: current)
            guard tags.count <= DeviceTags.maxCount else { return .tooMany(tags.count) }
            return .changed(
                try await Self.first(
                    connection.query(
                        """
                        UPDATE devices SET tags = \(tags)::text[], updated_at = now()
                        WHERE id = \(id)
                        RETURNING \(unescaped: Self.columns)
                        """,
                        logger: logger
                    )))
        }
        switch outcome {
        case .missing: return nil
        case .tooMany(let count): throw DeviceTags.tooMany(count, path: field)
        case .changed(let device): return device
        }
    }
}
