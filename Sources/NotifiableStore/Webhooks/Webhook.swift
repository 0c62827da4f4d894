import Foundation
import NotifiableCore

/// A webhook as operators see it (its secret is shown once, at creation, and never listed).
public struct Webhook: Sendable, Equatable {
    public enum State: String, Sendable { case active, paused }

    public let id: Int64
    public let appID: Int64
    public let url: String
    public let events: [WebhookEventType]
    public let state: State
    public let pausedAt: Date?
    public let pausedReason: String?
    public let consecutiveFailures: Int
    /// Events recorded and not yet in a batch.
    public let pendingEvents: Int64
    public let createdAt: Date
}

/// One POST of a webhook's events, with what became of its attempts.
public struct WebhookBatch: Sendable, Equatable {
    public let id: Int64
    public let webhookID: Int64
    public let state: String
    public let attempts: Int
    public let eventCount: Int64
    public let firstEventID: Int64?
    public let lastEventID: Int64?
    public let runAt: Date
    public let lastStatus: Int?
    public let lastError: String?
    public let createdAt: Date
    public let deliveredAt: Date?
}
