import Foundation
import NotifiableCore
import NotifiableStore

/// A webhook as the admin API shows it; `secret` only in the answer that created it.
struct WebhookJSON: Encodable, Sendable {
    let id: Int64
    let appID: Int64
    let url: String
    let events: [String]
    let state: String
    let pausedAt: String?
    let pausedReason: String?
    let consecutiveFailures: Int
    let pendingEvents: Int64
    let createdAt: String
    let secret: String?

    enum CodingKeys: String, CodingKey {
        case id, url, events, state, secret
        case appID = "app_id"
        case pausedAt = "paused_at"
        case pausedReason = "paused_reason"
        case consecutiveFailures = "consecutive_failures"
        case pendingEvents = "pending_events"
        case createdAt = "created_at"
    }

    init(_ webhook: Webhook, secret: String? = nil) {
        id = webhook.id
        appID = webhook.appID
        url = webhook.url
        events = webhook.events.map(\.rawValue)
        state = webhook.state.rawValue
        pausedAt = webhook.pausedAt.map(Timestamp.iso8601)
        pausedReason = webhook.pausedReason
        consecutiveFailures = webhook.consecutiveFailures
        pendingEvents = webhook.pendingEvents
        createdAt = Timestamp.iso8601(webhook.createdAt)
        self.secret = secret
    }

    /// Nulls written out (paused_at, paused_reason) so clients can test for them; the secret
    /// key appears only when there is one.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(appID, forKey: .appID)
        try container.encode(url, forKey: .url)
        try container.encode(events, forKey: .events)
        try container.encode(state, forKey: .state)
        try container.encode(pausedAt, forKey: .pausedAt)
        try container.encode(pausedReason, forKey: .pausedReason)
        try container.encode(consecutiveFailures, forKey: .consecutiveFailures)
        try container.encode(pendingEvents, forKey: .pendingEvents)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encodeIfPresent(secret, forKey: .secret)
    }
}

/// One POST of events and what became of it.
struct WebhookBatchJSON: Encodable, Sendable {
    let id: Int64
    let state: String
    let attempts: Int
    let eventCount: Int64
    let firstEventID: Int64?
    let lastEventID: Int64?
    let nextAttemptAt: String?
    let lastStatus: Int?
    let lastError: String?
    let createdAt: String
    let deliveredAt: String?

    enum CodingKeys: String, CodingKey {
        case id, state, attempts
        case eventCount = "event_count"
        case firstEventID = "first_event_id"
        case lastEventID = "last_event_id"
        case nextAttemptAt = "next_attempt_at"
        case lastStatus = "last_status"
        case lastError = "last_error"
        case createdAt = "created_at"
        case deliveredAt = "delivered_at"
    }

    init(_ batch: WebhookBatch) {
        id = batch.id
        state = batch.state
        attempts = batch.attempts
        eventCount = batch.eventCount
        firstEventID = batch.firstEventID
        lastEventID = batch.lastEventID
        nextAttemptAt = batch.state == "available" || batch.state == "retrying" ? Timestamp.iso8601(batch.runAt) : nil
        lastStatus = batch.lastStatus
        lastError = batch.lastError
        createdAt = Timestamp.iso8601(batch.createdAt)
        deliveredAt = batch.deliveredAt.map(Timestamp.iso8601)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(state, forKey: .state)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(eventCount, forKey: .eventCount)
        try container.encode(firstEventID, forKey: .firstEventID)
        try container.encode(lastEventID, forKey: .lastEventID)
        try container.encode(nextAttemptAt, forKey: .nextAttemptAt)
        try container.encode(lastStatus, forKey: .lastStatus)
        try container.encode(lastError, forKey: .lastError)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(deliveredAt, forKey: .deliveredAt)
    }
}
