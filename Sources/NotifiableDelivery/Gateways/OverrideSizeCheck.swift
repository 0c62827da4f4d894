import Foundation
import NotifiableCore

/// A sender's overrides are merged into what the service generates only at send time; a merge
/// that no gateway would take is refused when the notification is accepted, naming the override,
/// instead of failing every delivery later.
public enum OverrideSizeCheck {
    public static func check(_ content: NotificationContent) throws(ValidationError) {
        guard let overrides = content.overrides, !overrides.isEmpty else { return }
        // The longest id a notification can have, so a push that fits here fits with the real one.
        let id = Int64.max
        for (_, language, country) in content.localeVariants {
            if !overrides.apnsPayload.isEmpty || !overrides.apnsHeaders.isEmpty {
                do {
                    _ = try APNsPayload.encode(content: content, language: language, country: country, notificationID: id)
                } catch {
                    throw refusal("apns.payload", error.description)
                }
            }
            if !overrides.fcmAndroid.isEmpty || !overrides.fcmAPNs.isEmpty || !overrides.fcmData.isEmpty {
                for platform in DevicePlatform.allCases {
                    do {
                        _ = try FCMMessage.upToToken(
                            content: content, language: language, country: country, notificationID: id, now: .now, platform: platform
                        )
                    } catch {
                        throw refusal(platform == .ios && overrides.fcmData.isEmpty ? "fcm.apns" : "fcm", error.description)
                    }
                }
            }
        }
    }

    private static func refusal(_ field: String, _ detail: String) -> ValidationError {
        ValidationError(
            code: "too_large",
            message: "With \(field) merged in, the push is more than its gateway takes (\(detail)); make the override or the text shorter.",
            field: field
        )
    }
}

extension NotificationRequest {
    /// A request as every front door (the API, its batch route, the console, the command line)
    /// accepts it: `parse`, then the overrides' size against the gateways' limits.
    public static func accepted(_ body: JSONValue, now: Date) throws(ValidationError) -> NotificationRequest {
        let request = try parse(body, now: now)
        try OverrideSizeCheck.check(request.content)
        return request
    }
}
