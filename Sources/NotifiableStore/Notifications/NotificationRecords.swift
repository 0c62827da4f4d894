import Foundation
import NotifiableCore

/// A notification as stored.
public struct StoredNotification: Sendable, Equatable {
    public enum State: String, Sendable {
        case fanningOut = "fanning_out"
        case fannedOut = "fanned_out"
        case cancelled
    }

    public let id: Int64
    public let appID: Int64
    public let content: NotificationContent
    public let targeting: Targeting
    public let idempotencyKey: String?
    public let state: State
    public let createdAt: Date
    public let fannedOutAt: Date?
    public let cancelledAt: Date?
    /// For a stateful notification, its users' states as they stand.
    public let userStates: UserStateCounters?
    /// When it goes out, if it was scheduled.
    public let schedule: SendSchedule?
    /// Sent with content the devices fetch; `awaitingContent` until the backend uploads it.
    public let rich: Bool
    public let awaitingContent: Bool
}

extension StoredNotification {
    func with(userStates: UserStateCounters?) -> StoredNotification {
        StoredNotification(
            id: id, appID: appID, content: content, targeting: targeting, idempotencyKey: idempotencyKey, state: state,
            createdAt: createdAt, fannedOutAt: fannedOutAt, cancelledAt: cancelledAt, userStates: userStates, schedule: schedule,
            rich: rich, awaitingContent: awaitingContent
        )
    }
}

/// How many users a stateful notification reached and how many of them have, as things
/// stand, read, dismissed or activated it.
public struct UserStateCounters: Sendable, Equatable {
    public var targeted: Int64
    public var read: Int64
    public var dismissed: Int64
    public var activated: Int64
}

/// Exact counts of a notification's deliveries by what happened to them.
public struct NotificationCounters: Sendable, Equatable {
    public var targeted: Int64 = 0
    /// Waiting for their first attempt or being sent right now.
    public var pending: Int64 = 0
    public var retrying: Int64 = 0
    public var sent: Int64 = 0
    public var failed: Int64 = 0
    public var dead: Int64 = 0
    public var cancelled: Int64 = 0
    public var delivered: Int64 = 0
    public var opened: Int64 = 0
    public var lastError: String?

    public init() {}
}

/// A status the SDKs report for a notification on a device.
public enum DeliveryEvent: String, Sendable {
    case delivered
    case opened
}
