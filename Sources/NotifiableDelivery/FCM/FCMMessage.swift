import Foundation
import NotifiableCore

public enum FCMMessageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A parameter's key is one FCM keeps for itself; FCM would refuse the message.
    case reservedDataKey(String)
    /// The notification and data are larger than FCM accepts.
    case payloadTooLarge(size: Int)
    /// The content holds a value JSON cannot represent (e.g. a non-finite number).
    case unencodable(String)

    public var description: String {
        switch self {
        case .reservedDataKey(let key):
            "reserved_data_key: parameter \"\(key)\" is a key FCM reserves (from, notification, message_type, google…, gcm…); "
                + "rename it to reach Android devices"
        case .payloadTooLarge(let size):
            "payload_too_large: \(size) bytes of notification and data, FCM accepts at most \(FCMMessage.maximumPayloadSize)"
        case .unencodable(let detail):
            "payload_unencodable: \(detail)"
        }
    }
}

/// The body of an FCM HTTP v1 `messages:send` request for one device:
///
///     {"message": {"token": …, "data": {…, "n_id", "title", "message"},
///                  "notification": {"title", "body"},                       (notification style only)
///                  "android": {"priority", "ttl", "collapse_key", "notification": {"sound", "tag", "notification_count"}}}}
///
/// - `data`: the content's `parameters`, each as a string since FCM data holds only strings: strings as
///   they are, numbers and booleans as their JSON text (`42`, `1.5`, `true`), objects and arrays as compact
///   JSON with sorted keys. A null parameter is left out, so the app reads it as absent, which a JSON null
///   means, and not as the text "null". Beside them, always: `n_id`, the notification id as a decimal
///   string, and `title` and `message`, the text chosen for the device's language and country (each left
///   out when the notification has none). The Notifiable Android SDK builds its notification from exactly
///   these keys (`createNotificationFromMap`; docs/compatibility.md); the request parser refuses
///   parameters of those names.
/// - `notification` (with `AndroidStyle.notification` and some text): the same title and message, so
///   Android draws the notification while the app is in the background. FCM has no subtitle.
/// - `android.priority`: `HIGH` or `NORMAL` from the content's priority.
/// - `android.ttl`: `"<seconds>s"` until the content expires, clamped to 0…28 days; `"0s"` (now or never)
///   for `"ttl_seconds": 0`; left out when it does not expire (FCM then keeps it up to 28 days).
/// - `android.collapse_key`: the sender's collapse id only, so that FCM stores only the latest of a kind
///   for an offline device (FCM keeps at most four collapse keys per device, so none is made up).
/// - `android.notification` (notification style only): `sound` from the content's sound, `tag` from the
///   collapse id, else `n<id>`, so a push sent twice (an answer lost with its connection) replaces
///   itself on the device instead of showing twice, and `notification_count` from the badge. The
///   thread id, category and the iOS-only flags have no Android counterpart and are not sent; the
///   channel is the app's default. A data-style app draws the notification itself and should use
///   `n_id` as its tag for the same reason.
public enum FCMMessage {
    /// What FCM accepts of notification and data together, keys and values counted.
    public static let maximumPayloadSize = 4096
    /// FCM keeps messages for devices that are offline for at most 28 days.
    public static let maximumTTLSeconds = NotificationRequest.maxTTLSeconds

    /// The request body, compact JSON with sorted keys.
    public static func encode(
        token: String, content: NotificationContent, language: String?, country: String?, notificationID: Int64, now: Date,
        platform: DevicePlatform? = nil
    ) throws(FCMMessageError) -> [UInt8] {
        body(
            upToToken: try upToToken(
                content: content, language: language, country: country, notificationID: notificationID, now: now, platform: platform
            ),
            token: token
        )
    }

    /// The body for one device from the part that all devices of a content, language, country and
    /// time to live share: the token is the last member of `message`, as keys are sorted.
    public static func body(upToToken: [UInt8], token: String) -> [UInt8] {
        var body = upToToken
        body.append(contentsOf: JSONText.quoted(token).utf8)
        body.append(contentsOf: "}}".utf8)
        return body
    }

    /// The body up to the device's token: `{"message":{"android":…,"data":…,"notification":…,"token":`,
    /// or for an iPhone on Firebase `{"message":{"apns":…,"data":…,"token":`.
    public static func upToToken(
        content: NotificationContent, language: String?, country: String?, notificationID: Int64, now: Date,
        platform: DevicePlatform? = nil
    ) throws(FCMMessageError) -> [UInt8] {
        if let activity = content.liveActivity {
            return try liveActivityUpToToken(activity, content: content, notificationID: notificationID, now: now)
        }
        var data: [String: JSONValue] = [:]
        for (key, value) in content.parameters.sorted(by: { $0.key < $1.key }) {
            // Stored before these keys were refused at the API: the notification's own text wins.
            guard let text = dataText(value), !NotificationContent.isAndroidSDKKey(key) else { continue }
            if NotificationContent.isFCMReservedDataKey(key) { throw .reservedDataKey(key) }
            data[key] = .string(text)
        }
        let text = content.text(language: language, country: country)
        data["n_id"] = .string(String(notificationID))
        if let title = text.title { data["title"] = .string(title) }
        if let message = text.message { data["message"] = .string(message) }

        var message: [String: JSONValue] = [:]
        var notification: [String: JSONValue] = [:]
        if platform == .ios {
            message["apns"] = .object(apnsBlock(content: content, language: language, country: country, notificationID: notificationID, now: now))
        } else {
            let style = AndroidMessage(content: content, text: text, notificationID: notificationID)
            notification = style.notification
            data.merge(style.data) { _, drawn in drawn }
            var android = style.android
            if let ttl = content.secondsToLive(now: now) { android["ttl"] = .string("\(ttl)s") }
            if let override = content.overrides?.fcmAndroid, !override.isEmpty { android = PushOverrides.merged(android, with: override) }
            message["android"] = .object(android)
        }
        for (key, value) in content.overrides?.fcmData ?? [:] { data[key] = .string(value) }
        message["data"] = .object(data)
        if !notification.isEmpty { message["notification"] = .object(notification) }

        let size = payloadSize(data: data, notification: notification)
        guard size <= maximumPayloadSize else { throw .payloadTooLarge(size: size) }
        if case .object(let apns)? = message["apns"], case .object(let payload)? = apns["payload"] {
            // FCM hands an iPhone's payload to APNs with the data beside aps: APNs's limit applies to both.
            let delivered = JSONValue.object(payload.merging(data) { own, _ in own }).jsonText().utf8.count
            guard delivered <= APNsPayload.maximumSize else { throw .payloadTooLarge(size: delivered) }
        }

        let members = JSONValue.object(message)
        guard members.numbersAreFinite else { throw .unencodable("a parameter holds a number JSON cannot write (infinite or NaN)") }
        // `message` always has members (data holds n_id), so its text ends `…}` and a member can follow.
        var upToToken = Array(#"{"message":"#.utf8)
        upToToken.append(contentsOf: members.jsonText().utf8.dropLast())
        upToToken.append(contentsOf: #","token":"#.utf8)
        return upToToken
    }

    /// What an iPhone registered through Firebase needs to show the push: FCM passes `apns.headers`
    /// and `apns.payload` to APNs as they are, and puts `data` beside `aps` in the payload. The
    /// sender's `fcm.apns` override is merged in; its `apns` override is for devices on APNs.
    /// - `headers`: `apns-priority` and `apns-push-type` as for a device on APNs, `apns-expiration`
    ///   (`0` for now-or-never), `apns-collapse-id`;
    /// - `payload.aps`: the same `aps` as an APNs push (`APNsPayload.aps`);
    /// - `fcm_options.image`: the image, which Firebase's notification service extension shows.
    static func apnsBlock(content: NotificationContent, language: String?, country: String?, notificationID: Int64, now: Date) -> [String: JSONValue] {
        var headers: [String: JSONValue] = [:]
        var generated = content
        generated.overrides?.apnsHeaders = [:]  // the sender's apns override is for devices on APNs
        for (name, value) in APNsRequestHeaders.make(content: generated, topic: "", deliveryID: 0, notificationID: notificationID, now: now)
        where ["apns-priority", "apns-push-type", "apns-expiration", "apns-collapse-id"].contains(name) {
            headers[name] = .string(value)
        }
        var apns: [String: JSONValue] = [
            "headers": .object(headers),
            "payload": .object(["aps": .object(APNsPayload.aps(content: content, language: language, country: country))]),
        ]
        if let image = content.imageURL { apns["fcm_options"] = .object(["image": .string(image)]) }
        if let override = content.overrides?.fcmAPNs, !override.isEmpty { apns = PushOverrides.merged(apns, with: override) }
        return apns
    }

    /// A Live Activity's event for an iPhone registered through Firebase (docs/compatibility.md):
    /// `{"message":{"apns":{"headers":…,"live_activity_token":…,"payload":{"aps":…,"n_id":…}},"token":`.
    /// FCM sends it to APNs as a `liveactivity` push to the activity's token; the payload is the one a
    /// device on APNs gets (`LiveActivityPush.aps` and `n_id`), at the event's priority, kept by APNs
    /// until the event's expiry. No `data`: an activity's push wakes no app code.
    static func liveActivityUpToToken(
        _ activity: LiveActivityPush, content: NotificationContent, notificationID: Int64, now: Date
    ) throws(FCMMessageError) -> [UInt8] {
        var apns: [String: JSONValue] = [
            "headers": .object([
                "apns-priority": .string(activity.priority == .high ? "10" : "5"),
                "apns-expiration": .string(content.nowOrNever ? "0" : APNsRequestHeaders.expiration(content.expiresAt, now: now)),
            ]),
            "payload": .object(["aps": .object(activity.aps), "n_id": .integer(notificationID)]),
        ]
        if let token = activity.token { apns["live_activity_token"] = .string(token) }
        let payloadSize = JSONValue.object(["aps": .object(activity.aps), "n_id": .integer(notificationID)]).jsonText().utf8.count
        guard payloadSize <= APNsPayload.maximumSize else { throw .payloadTooLarge(size: payloadSize) }
        let members = JSONValue.object(["apns": .object(apns)])
        guard members.numbersAreFinite else { throw .unencodable("a content state holds a number JSON cannot write (infinite or NaN)") }
        var upToToken = Array(#"{"message":"#.utf8)
        upToToken.append(contentsOf: members.jsonText().utf8.dropLast())
        upToToken.append(contentsOf: #","token":"#.utf8)
        return upToToken
    }

    /// What the part up to the token depends on besides the content: the text chosen for the device's
    /// language and country, and the time to live, which changes every second.
    public static func sharedPartKey(
        content: NotificationContent, language: String?, country: String?, now: Date, platform: DevicePlatform? = nil
    ) -> RenderedPayloadKey {
        // An iPhone's apns-expiration is in whole seconds since 1970, which the time to live follows.
        RenderedPayloadKey(
            provider: .fcm, language: language, country: country, ttlSeconds: content.secondsToLive(now: now), platform: platform
        )
    }

    /// A parameter as FCM data text; nil for null (left out).
    static func dataText(_ value: JSONValue) -> String? {
        switch value {
        case .null: nil
        case .string(let text): text
        case .bool, .integer, .number, .array, .object: value.jsonText()
        }
    }

    /// The bytes FCM counts against its limit: every key and value of the data and the notification.
    static func payloadSize(data: [String: JSONValue], notification: [String: JSONValue]) -> Int {
        (Array(data) + Array(notification)).reduce(0) { total, member in
            guard case .string(let value) = member.value else { return total }
            return total + member.key.utf8.count + value.utf8.count
        }
    }
}
