import Foundation
import NotifiableCore
import NotifiableStore

/// A user's copy of a stateful notification as the API answers it. `id` is the notification's
/// id, the `n_id` its pushes carry, so a device can act on what it received without a lookup.
struct UserNotificationJSON: Encodable, Sendable {
    let id: Int64
    let userAlias: String
    let readState: String
    let userActionState: String
    let title: String?
    let subtitle: String?
    let message: String?
    let parameters: [String: JSONValue]
    let badge: Int?
    let sound: String?
    let category: String?
    let threadID: String?
    let createdAt: String
    let updatedAt: String
    let expiresAt: String

    enum CodingKeys: String, CodingKey {
        case id, title, subtitle, message, parameters, badge, sound, category
        case userAlias = "user_alias"
        case readState = "read_state"
        case userActionState = "user_action_state"
        case threadID = "thread_id"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case expiresAt = "expires_at"
    }

    /// The text in the language and country asked for, as a device of that locale got it.
    init(_ record: UserNotificationRecord, language: String?, country: String?) {
        let text = record.content.text(language: language, country: country)
        id = record.notificationID
        userAlias = record.userAlias
        readState = record.readState.rawValue
        userActionState = record.actionState.rawValue
        title = text.title
        subtitle = text.subtitle
        message = text.message
        parameters = record.content.parameters
        badge = record.content.badge
        sound = record.content.sound
        category = record.content.category
        threadID = record.content.threadID
        createdAt = Timestamp.iso8601(record.createdAt)
        updatedAt = Timestamp.iso8601(record.updatedAt)
        expiresAt = Timestamp.iso8601(record.expiresAt)
    }
}

/// One entry of a user's change feed.
struct UserChangeJSON: Encodable, Sendable {
    let cursor: String
    let kind: String
    let id: Int64
    let readState: String
    let userActionState: String
    let deviceTokenID: Int64?
    let changedAt: String

    enum CodingKeys: String, CodingKey {
        case cursor, kind, id
        case readState = "read_state"
        case userActionState = "user_action_state"
        case deviceTokenID = "device_token_id"
        case changedAt = "changed_at"
    }

    init(_ change: UserNotificationChange) {
        cursor = String(change.seq)
        kind = change.kind.rawValue
        id = change.notificationID
        readState = change.readState.rawValue
        userActionState = change.actionState.rawValue
        deviceTokenID = change.deviceID
        changedAt = Timestamp.iso8601(change.changedAt)
    }
}

/// A page of the change feed: pass `next_cursor` back as `?since=`; read again while
/// `has_more` is true.
struct UserChangesJSON: Encodable, Sendable {
    let changes: [UserChangeJSON]
    let nextCursor: String
    let hasMore: Bool

    enum CodingKeys: String, CodingKey {
        case changes
        case nextCursor = "next_cursor"
        case hasMore = "has_more"
    }

    init(_ page: UserChangesPage) {
        changes = page.changes.map(UserChangeJSON.init)
        nextCursor = String(page.nextCursor)
        hasMore = page.hasMore
    }
}
