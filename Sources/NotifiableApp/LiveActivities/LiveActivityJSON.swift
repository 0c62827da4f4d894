import Foundation
import NotifiableCore
import NotifiableStore

struct RegisteredTokenJSON: Encodable, Sendable {
    let deviceID: Int64
    let activityID: String?
    let attributesType: String?
    let token: String

    enum CodingKeys: String, CodingKey {
        case token
        case deviceID = "device_id"
        case activityID = "activity_id"
        case attributesType = "attributes_type"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(deviceID, forKey: .deviceID)
        try container.encodeIfPresent(activityID, forKey: .activityID)
        try container.encode(attributesType, forKey: .attributesType)
        try container.encode(token, forKey: .token)
    }
}

/// What removing a token did: `removed` is false when the device had none (a repeat).
struct RemovedTokenJSON: Encodable, Sendable {
    let deviceID: Int64
    let activityID: String?
    let attributesType: String?
    let removed: Bool

    enum CodingKeys: String, CodingKey {
        case removed
        case deviceID = "device_id"
        case activityID = "activity_id"
        case attributesType = "attributes_type"
    }
}

/// What accepting an event did: its timestamp (`aps.timestamp`) and how many pushes it queued.
struct LiveActivityEventJSON: Encodable, Sendable {
    let activityID: String
    let event: String
    let notificationID: Int64
    let timestamp: Int64
    let devices: Int

    enum CodingKeys: String, CodingKey {
        case event, timestamp, devices
        case activityID = "activity_id"
        case notificationID = "notification_id"
    }
}

/// An activity with its pushes counted by state.
struct LiveActivityJSON: Encodable, Sendable {
    let activityID: String
    let notificationID: Int64
    let state: String
    let lastTimestamp: Int64
    let tokens: Int
    let deliveries: [String: Int64]
    let createdAt: String
    let endedAt: String?

    enum CodingKeys: String, CodingKey {
        case state, tokens, deliveries
        case activityID = "activity_id"
        case notificationID = "notification_id"
        case lastTimestamp = "last_timestamp"
        case createdAt = "created_at"
        case endedAt = "ended_at"
    }

    init(_ summary: LiveActivityStore.Summary) {
        activityID = summary.activityID
        notificationID = summary.notificationID
        state = summary.state
        lastTimestamp = summary.lastTimestamp
        tokens = summary.tokens
        deliveries = summary.deliveries
        createdAt = Timestamp.iso8601(summary.createdAt)
        endedAt = summary.endedAt.map(Timestamp.iso8601)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(activityID, forKey: .activityID)
        try container.encode(notificationID, forKey: .notificationID)
        try container.encode(state, forKey: .state)
        try container.encode(lastTimestamp, forKey: .lastTimestamp)
        try container.encode(tokens, forKey: .tokens)
        try container.encode(deliveries, forKey: .deliveries)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(endedAt, forKey: .endedAt)
    }
}
