import Foundation

/// Whether the user has read a notification (on any of their devices).
public enum ReadState: String, Sendable, Codable, CaseIterable {
    case unread
    case read
}

/// What the user did with a notification (on any of their devices).
public enum UserActionState: String, Sendable, Codable, CaseIterable {
    case noInteraction = "no_interaction"
    case dismissed
    case activated
}

/// One entry of a user's change feed.
public struct UserNotificationChange: Sendable, Equatable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case created, updated, deleted, expired
    }

    /// The change's place in the user's feed: 1, 2, 3, … with no gaps.
    public let seq: Int64
    public let kind: Kind
    /// The notification (`n_id`) whose user state changed.
    public let notificationID: Int64
    public let readState: ReadState
    public let actionState: UserActionState
    /// The device that made the change, when it said which.
    public let deviceID: Int64?
    public let changedAt: Date

    public init(
        seq: Int64, kind: Kind, notificationID: Int64, readState: ReadState, actionState: UserActionState,
        deviceID: Int64?, changedAt: Date
    ) {
        self.seq = seq
        self.kind = kind
        self.notificationID = notificationID
        self.readState = readState
        self.actionState = actionState
        self.deviceID = deviceID
        self.changedAt = changedAt
    }
}
