import Foundation
import NotifiableCore
import NotifiableStore

/// A notification as the API answers it, with its exact counters.
struct NotificationJSON: Encodable, Sendable {
    struct Counters: Encodable, Sendable {
        let targeted, pending, retrying, sent, failed, dead, cancelled, delivered, opened: Int64
    }

    let id: Int64
    let state: String
    let idempotencyKey: String?
    let createdAt: String
    let fannedOutAt: String?
    let cancelledAt: String?
    let expiresAt: String?
    let counters: Counters?
    let lastError: String?
    /// For a stateful notification: its users, and how many have read, dismissed or activated it.
    let userStates: UserStates?
    /// A scheduled notification's send time: an instant, or with `local_time` a wall-clock
    /// time without a zone.
    let sendAt: String?
    let localTime: Bool?
    let rich: Bool?

    struct UserStates: Encodable, Sendable {
        let targeted, read, dismissed, activated: Int64
    }

    enum CodingKeys: String, CodingKey {
        case id, state, counters
        case idempotencyKey = "idempotency_key"
        case createdAt = "created_at"
        case fannedOutAt = "fanned_out_at"
        case cancelledAt = "cancelled_at"
        case expiresAt = "expires_at"
        case lastError = "last_error"
        case userStates = "user_states"
        case sendAt = "send_at"
        case localTime = "local_time"
        case rich
    }

    init(_ notification: StoredNotification, counters: NotificationCounters?) {
        id = notification.id
        state = Self.state(of: notification, counters: counters)
        idempotencyKey = notification.idempotencyKey
        createdAt = Timestamp.iso8601(notification.createdAt)
        fannedOutAt = notification.fannedOutAt.map(Timestamp.iso8601)
        cancelledAt = notification.cancelledAt.map(Timestamp.iso8601)
        expiresAt = notification.content.expiresAt.map(Timestamp.iso8601)
        self.counters = counters.map {
            Counters(
                targeted: $0.targeted, pending: $0.pending, retrying: $0.retrying, sent: $0.sent, failed: $0.failed,
                dead: $0.dead, cancelled: $0.cancelled, delivered: $0.delivered, opened: $0.opened)
        }
        lastError = counters?.lastError
        rich = notification.rich ? true : nil
        switch notification.schedule {
        case .at(let date)?:
            sendAt = Timestamp.iso8601(date)
            localTime = nil
        case .localTime(let wallClock)?:
            sendAt = wallClock.formatted(
                Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day().dateTimeSeparator(.standard).time(includingFractionalSeconds: false).timeSeparator(
                    .colon))
            localTime = true
        case nil:
            sendAt = nil
            localTime = nil
        }
        userStates = notification.userStates.map {
            UserStates(targeted: $0.targeted, read: $0.read, dismissed: $0.dismissed, activated: $0.activated)
        }
    }

    /// queued (audience still being resolved), sending, completed, or cancelled.
    static func state(of notification: StoredNotification, counters: NotificationCounters?) -> String {
        switch notification.state {
        case .cancelled: return "cancelled"
        case .fanningOut where notification.awaitingContent: return "awaiting_content"
        case .fanningOut: return notification.schedule.map { $0.earliestInstant > Date() } == true ? "scheduled" : "queued"
        case .fannedOut:
            guard let counters else { return "sending" }
            return counters.pending + counters.retrying > 0 ? "sending" : "completed"
        }
    }
}

/// One delivery as the API answers it.
struct DeliveryJSON: Encodable, Sendable {
    let id: Int64
    let notificationID: Int64
    let deviceID: Int64
    let userAlias: String?
    let provider: String
    let state: String
    let attempts: Int
    let reason: String?
    let gatewayStatus: Int?
    let gatewayID: String?
    let nextAttemptAt: String?
    let createdAt: String
    let sentAt: String?
    let failedAt: String?
    let deadAt: String?
    let cancelledAt: String?
    let deliveredAt: String?
    let openedAt: String?
    let sandbox: Bool
    let kind: String

    enum CodingKeys: String, CodingKey {
        case id, provider, state, attempts, reason, sandbox, kind
        case notificationID = "notification_id"
        case deviceID = "device_id"
        case userAlias = "user_alias"
        case gatewayStatus = "gateway_status"
        case gatewayID = "gateway_id"
        case nextAttemptAt = "next_attempt_at"
        case createdAt = "created_at"
        case sentAt = "sent_at"
        case failedAt = "failed_at"
        case deadAt = "dead_at"
        case cancelledAt = "cancelled_at"
        case deliveredAt = "delivered_at"
        case openedAt = "opened_at"
    }

    init(_ record: DeliveryRecord) {
        id = record.id
        notificationID = record.notificationID
        deviceID = record.deviceID
        userAlias = record.userAlias
        provider = record.provider.rawValue
        state = record.state
        attempts = record.attempts
        reason = record.reason
        gatewayStatus = record.gatewayStatus
        gatewayID = record.gatewayID
        nextAttemptAt = DeliveryState(rawValue: record.state)?.isWaiting == true ? Timestamp.iso8601(record.runAt) : nil
        createdAt = Timestamp.iso8601(record.createdAt)
        sentAt = record.sentAt.map(Timestamp.iso8601)
        failedAt = record.failedAt.map(Timestamp.iso8601)
        deadAt = record.deadAt.map(Timestamp.iso8601)
        cancelledAt = record.cancelledAt.map(Timestamp.iso8601)
        deliveredAt = record.deliveredAt.map(Timestamp.iso8601)
        openedAt = record.openedAt.map(Timestamp.iso8601)
        sandbox = record.sandbox
        kind = record.kind
    }
}

/// A page of a keyset-paginated listing: pass `next_cursor` back as `?cursor=` for the next.
struct Page<Item: Encodable & Sendable>: Encodable, Sendable {
    let data: [Item]
    let nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case data
        case nextCursor = "next_cursor"
    }

    /// `next_cursor` is written as null on the last page, so clients can test for it.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(data, forKey: .data)
        try container.encode(nextCursor, forKey: .nextCursor)
    }
}
