import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// One delivery as operators and the API see it.
public struct DeliveryRecord: Sendable, Equatable {
    public let id: Int64
    public let notificationID: Int64
    public let deviceID: Int64
    public let userAlias: String?
    public let provider: Provider
    public let state: String
    public let attempts: Int
    public let reason: String?
    public let gatewayStatus: Int?
    public let gatewayID: String?
    public let runAt: Date
    public let createdAt: Date
    public let sentAt: Date?
    public let failedAt: Date?
    public let deadAt: Date?
    public let cancelledAt: Date?
    public let deliveredAt: Date?
    public let openedAt: Date?
    /// Sent to the built-in fake gateway of an app in sandbox mode.
    public let sandbox: Bool
    /// `push`, the notification itself, or `sync`, a background push carrying a user's new
    /// state of a stateful notification to one of the user's devices.
    public let kind: String
}

extension DeliveryRecord {
    /// The columns `decode` reads, of deliveries `q` joined with devices `d`.
    static let columns = """
        q.id, q.notification_id, q.device_id, d.user_alias, d.provider, q.state, q.attempts, q.reason,
        q.gateway_status, q.gateway_id, q.run_at, q.created_at, q.sent_at, q.failed_at, q.dead_at,
        q.cancelled_at, q.delivered_at, q.opened_at, q.sandbox, q.kind
        """

    static func decode(_ row: PostgresRow) throws -> DeliveryRecord {
        let (
            id, notificationID, deviceID, alias, provider, state, attempts, reason, status, gatewayID,
            runAt, createdAt, sentAt, failedAt, deadAt, cancelledAt, deliveredAt, openedAt, sandbox, kind
        ) = try row.decode(
            (
                Int64, Int64, Int64, String?, String, String, Int32, String?, Int32?, String?,
                Date, Date, Date?, Date?, Date?, Date?, Date?, Date?, Bool, String
            ).self
        )
        return DeliveryRecord(
            id: id, notificationID: notificationID, deviceID: deviceID, userAlias: alias,
            provider: Provider(rawValue: provider) ?? .apns, state: state, attempts: Int(attempts), reason: reason,
            gatewayStatus: status.map(Int.init), gatewayID: gatewayID, runAt: runAt, createdAt: createdAt,
            sentAt: sentAt, failedAt: failedAt, deadAt: deadAt, cancelledAt: cancelledAt,
            deliveredAt: deliveredAt, openedAt: openedAt, sandbox: sandbox, kind: kind
        )
    }
}
