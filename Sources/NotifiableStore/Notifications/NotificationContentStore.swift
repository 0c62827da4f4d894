import Crypto
import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// What a rich notification's content is, without its bytes.
public struct RichContentSummary: Sendable, Equatable {
    public let mediaType: String
    public let size: Int
    /// The hex SHA-256 of the bytes.
    public let sha256: String
}

/// A rich notification's content with its bytes.
public struct RichContent: Sendable, Equatable {
    public let summary: RichContentSummary
    public let data: [UInt8]
}

/// The content of rich notifications: stored once by the app's backend, read by the devices
/// the notification was sent to.
public struct NotificationContentStore: Sendable {
    let client: Database
    let logger: Logger

    /// The largest content accepted.
    public static let maximumSize = 1024 * 1024

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public enum AttachResult: Sendable, Equatable {
        case attached(RichContentSummary)
        case noSuchNotification
        /// The notification was not sent with `"rich": true`.
        case notRich
        /// Content is stored once: devices may hold it under its ETag.
        case alreadyAttached
    }

    /// What content is known by (its ETag, and what the console's compose form digests): the hex SHA-256.
    public static func sha256(of data: [UInt8]) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    /// Stores the content of a rich notification that is waiting for it; its fan-out then
    /// begins (in the same transaction, so no push goes before its content exists).
    public func attach(notificationID: Int64, appID: Int64, mediaType: String, data: [UInt8]) async throws -> AttachResult {
        let sha256 = Self.sha256(of: data)
        let result = try await client.withTransaction(logger: logger) { connection -> AttachResult in
            let rows = try await connection.query(
                "SELECT rich, awaiting_content FROM notifications WHERE id = \(notificationID) AND app_id = \(appID) FOR UPDATE",
                logger: logger
            ).decode((Bool, Bool).self)
            var found: (rich: Bool, awaiting: Bool)?
            for try await row in rows { found = row }
            guard let found else { return .noSuchNotification }
            guard found.rich else { return .notRich }
            guard found.awaiting else { return .alreadyAttached }
            try await connection.query(
                """
                INSERT INTO notification_contents (notification_id, app_id, media_type, data, sha256)
                VALUES (\(notificationID), \(appID), \(mediaType), \(Data(data)), \(sha256))
                """,
                logger: logger
            )
            try await connection.query(
                "UPDATE notifications SET awaiting_content = false WHERE id = \(notificationID)", logger: logger
            )
            return .attached(RichContentSummary(mediaType: mediaType, size: data.count, sha256: sha256))
        }
        if case .attached = result { await wakeWorkers(client, logger: logger) }
        return result
    }

    /// The content, for a device of the app that the notification was sent to (or, without a
    /// device, for the app's backend); nil otherwise.
    public func content(notificationID: Int64, appID: Int64, deviceID: Int64?) async throws -> RichContent? {
        let rows = try await client.query(
            """
            SELECT c.media_type, c.sha256, c.data FROM notification_contents c
            WHERE c.notification_id = \(notificationID) AND c.app_id = \(appID)
              AND (\(deviceID)::int8 IS NULL OR EXISTS (
                  SELECT 1 FROM deliveries q
                  WHERE q.notification_id = c.notification_id AND q.device_id = \(deviceID)::int8 AND q.kind = 'push'
                    AND q.state <> 'cancelled'))
            """,
            logger: logger
        ).decode((String, String, Data).self)
        for try await (mediaType, sha256, data) in rows {
            return RichContent(summary: RichContentSummary(mediaType: mediaType, size: data.count, sha256: sha256), data: Array(data))
        }
        return nil
    }
}
