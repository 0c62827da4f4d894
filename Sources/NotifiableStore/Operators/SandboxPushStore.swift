import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// A recorded sandbox push as operators list it.
public struct SandboxPushRecord: Sendable {
    public let id: Int64
    public let deliveryID: Int64
    public let notificationID: Int64
    public let deviceID: Int64
    public let push: SandboxPush
    public let createdAt: Date
}

/// The pushes apps in sandbox mode sent, newest first.
public struct SandboxPushStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Lists the app's recorded pushes, newest first, before `beforeID` when paging;
    /// optionally only one notification's.
    public func list(appID: Int64, notificationID: Int64?, beforeID: Int64?, limit: Int) async throws -> [SandboxPushRecord] {
        let rows = try await client.query(
            """
            SELECT id, delivery_id, notification_id, device_id, provider, token, headers::text, payload, created_at
            FROM sandbox_pushes
            WHERE app_id = \(appID) AND (\(notificationID)::int8 IS NULL OR notification_id = \(notificationID))
              AND (\(beforeID)::int8 IS NULL OR id < \(beforeID))
            ORDER BY id DESC
            LIMIT \(limit)
            """,
            logger: logger
        )
        var records: [SandboxPushRecord] = []
        for try await (id, deliveryID, notificationID, deviceID, provider, token, headersText, payload, createdAt) in rows.decode(
            (Int64, Int64, Int64, Int64, String, String, String, String, Date).self
        ) {
            let headers = (try? JSONDecoder().decode([String: String].self, from: Data(headersText.utf8))) ?? [:]
            records.append(
                SandboxPushRecord(
                    id: id, deliveryID: deliveryID, notificationID: notificationID, deviceID: deviceID,
                    push: SandboxPush(provider: Provider(rawValue: provider) ?? .apns, token: token, headers: headers, payload: payload),
                    createdAt: createdAt
                ))
        }
        return records
    }

    /// Stores the pushes of deliveries just recorded `sent` (in the same transaction), taking
    /// app, notification and device from the delivery rows.
    static func insert(_ results: [DeliveryResult], on connection: PostgresConnection, logger: Logger) async throws {
        let pushes = results.compactMap { result in result.sandboxPush.map { (result, $0) } }
        let headers = pushes.map { _, push in
            String(decoding: (try? JSONEncoder().encode(push.headers)) ?? Data("{}".utf8), as: UTF8.self)
        }
        try await connection.query(
            """
            INSERT INTO sandbox_pushes (app_id, delivery_id, notification_id, device_id, provider, token, headers, payload)
            SELECT q.app_id, q.id, q.notification_id, q.device_id, r.provider, r.token, r.headers::jsonb, r.payload
            FROM unnest(\(pushes.map { $0.0.deliveryID })::int8[], \(pushes.map { Int32($0.0.attempt) })::int4[],
                        \(pushes.map { $0.1.provider.rawValue })::text[], \(pushes.map { $0.1.token })::text[],
                        \(headers)::text[], \(pushes.map { $0.1.payload })::text[])
                 AS r(id, attempt, provider, token, headers, payload)
            JOIN deliveries q ON q.id = r.id AND q.id = ANY(\(pushes.map { $0.0.deliveryID })::int8[])
                 AND q.day = ANY(\(DeliveryPartitions.days(of: pushes.map { $0.0.deliveryID }))::int4[])
                 AND q.attempts = r.attempt AND q.state = 'sent'
            -- A push in flight while its device was erased is not kept.
            JOIN devices d ON d.id = q.device_id AND d.erased_at IS NULL
            ON CONFLICT (delivery_id) DO NOTHING
            """,
            logger: logger
        )
    }
}
