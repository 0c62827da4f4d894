import NotifiableCore

/// What an FCM message for an Android device carries beyond the notification's text in `data`,
/// by who draws the notification:
///
/// - **notification style** (Android draws it): `notification` with the title, body and image, and
///   `android.notification` with `tag`, `sound`, `notification_count` (the badge unless given),
///   `channel_id`, `icon`, `color`, `click_action`, `visibility`, `sticky`, the localization keys
///   (`title_loc_key`/`-args`, `body_loc_key`/`-args`), and `notification_priority:
///   PRIORITY_MAX` for a time-sensitive or critical notification;
/// - **data style** (the app draws it, as the Notifiable Android SDK does): the same presentation as
///   data keys the app reads — `image_url`, `android_channel_id`, `android_icon`, `android_color`,
///   `android_click_action`, `android_visibility` (`private`, `public`, `secret`), `android_sticky`
///   (`true`/`false`), `android_notification_count` (only when given),
///   `title_loc_key`, `title_loc_args` and `body_loc_key`, `body_loc_args` (arrays as JSON text).
///
/// Both: `android.priority` `HIGH` for high-priority or urgent notifications, else `NORMAL`, and the
/// sender's `collapse_id` as `android.collapse_key`.
struct AndroidMessage {
    var notification: [String: JSONValue] = [:]
    var data: [String: JSONValue] = [:]
    var android: [String: JSONValue] = [:]

    init(content: NotificationContent, text: LocalizedText, notificationID: Int64) {
        let high = content.priority == .high || content.isUrgent
        android["priority"] = .string(high ? "HIGH" : "NORMAL")
        if let collapseID = content.collapseID, !collapseID.isEmpty { android["collapse_key"] = .string(collapseID) }
        let keys = content.localizationKeys ?? LocalizationKeys()
        switch content.androidStyle {
        case .notification:
            if let title = text.title { notification["title"] = .string(title) }
            if let body = text.message { notification["body"] = .string(body) }
            guard !notification.isEmpty || keys.showsText else { return }
            var shown: [String: JSONValue] = ["tag": .string(content.collapseIdentifier(notificationID: notificationID))]
            if let sound = content.criticalSound?.name ?? content.sound { shown["sound"] = .string(sound) }
            if let image = content.imageURL { shown["image"] = .string(image) }
            if content.isUrgent { shown["notification_priority"] = .string("PRIORITY_MAX") }
            shown.merge(Self.fields(content.androidPresentation, keys, naming: .notification)) { generated, _ in generated }
            android["notification"] = .object(shown)
        case .data:
            if let image = content.imageURL { data["image_url"] = .string(image) }
            // The badge stays the app's to show: only a count the sender gave is passed on.
            data.merge(Self.fields(content.android ?? AndroidPresentation(), keys, naming: .data)) { generated, _ in generated }
        }
    }

    private enum Naming { case notification, data }

    /// The presentation's fields, under `android.notification`'s names or as data keys (strings).
    private static func fields(_ presentation: AndroidPresentation, _ keys: LocalizationKeys, naming: Naming) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        func put(_ name: String, _ value: JSONValue?) {
            guard let value else { return }
            switch naming {
            case .notification: fields[name] = value
            case .data: fields[name.hasSuffix("loc_key") || name.hasSuffix("loc_args") ? name : "android_\(name)"] = .string(text(value))
            }
        }
        put("channel_id", presentation.channelID.map(JSONValue.string))
        put("icon", presentation.icon.map(JSONValue.string))
        put("color", presentation.color.map(JSONValue.string))
        put("click_action", presentation.clickAction.map(JSONValue.string))
        put("visibility", presentation.visibility.map { .string(naming == .notification ? $0.fcmName : $0.rawValue) })
        put("sticky", presentation.sticky.map(JSONValue.bool))
        put("notification_count", presentation.notificationCount.map { .integer(Int64($0)) })
        put("title_loc_key", keys.titleKey.map(JSONValue.string))
        put("title_loc_args", keys.titleArgs.map { .array($0.map(JSONValue.string)) })
        put("body_loc_key", keys.bodyKey.map(JSONValue.string))
        put("body_loc_args", keys.bodyArgs.map { .array($0.map(JSONValue.string)) })
        return fields
    }

    private static func text(_ value: JSONValue) -> String {
        if case .string(let text) = value { return text }
        return value.jsonText()
    }
}
