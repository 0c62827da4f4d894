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
    let channel: ActivityChannelJSON?
    let broadcasts: [String: Int64]

    enum CodingKeys: String, CodingKey {
        case state, tokens, deliveries, channel, broadcasts
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
        channel = summary.channel.map(ActivityChannelJSON.init)
        broadcasts = summary.broadcasts
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
        try container.encode(channel, forKey: .channel)
        try container.encode(broadcasts, forKey: .broadcasts)
    }
}

/// An activity's broadcast channel: `channel_id` is what the app passes to ActivityKit
/// (`pushType: .channel(id)`) once `state` is `open`.
struct ActivityChannelJSON: Encodable, Sendable {
    let state: String
    let channelID: String?
    let messageStorage: Bool
    let error: String?

    enum CodingKeys: String, CodingKey {
        case state, error
        case channelID = "channel_id"
        case messageStorage = "message_storage"
    }

    init(_ channel: ActivityChannel) {
        state = channel.state.rawValue
        channelID = channel.channelID
        messageStorage = channel.messageStorage
        error = channel.error
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(state, forKey: .state)
        try container.encode(channelID, forKey: .channelID)
        try container.encode(messageStorage, forKey: .messageStorage)
        try container.encode(error, forKey: .error)
    }
}

/// What asking for a channel did.
struct ActivityChannelRequestJSON: Encodable, Sendable {
    let activityID: String
    let channel: ActivityChannelJSON

    enum CodingKeys: String, CodingKey {
        case channel
        case activityID = "activity_id"
    }
}
