import Foundation
import NotifiableCore

// How the Notifiable SDKs read a push they receive: small ports, our own code, written from the
// facts in docs/compatibility.md (§2 and §4) so the end-to-end tests can check what a device would
// make of what the service sent, not only what the service meant to send.

/// The Notifiable Android SDK 1.3.5 reading an FCM data message.
///
/// Port of `Utils.createNotificationFromMap(Map<String, String>)` in
/// FutureWorkshops/Notifiable-Android `library/src/main/java/com/futureworkshops/notifiable/Utils.java`
/// (docs/compatibility.md §4): every key is compared with `equalsIgnoreCase` against `n_id`, `title`
/// and `message`; `n_id` goes through `Integer.valueOf` (a signed 32-bit decimal, else
/// `NumberFormatException`); every other key becomes a device property (`String.valueOf(value)`).
enum NotifiableAndroidSDK {
    /// `com.futureworkshops.notifiable.model.NotifiableMessage` as the SDK fills it.
    struct Message: Equatable, Sendable {
        /// `setNotificationId(Integer.valueOf(…))`; nil when there is no `n_id` key, or when
        /// `Integer.valueOf` would throw (see `rawNotificationID` to tell the two apart).
        var notificationID: Int32?
        var title: String?
        var message: String?
        /// Every key that is none of the three.
        var deviceProperties: [String: String]
        /// The text of the key taken as `n_id`, as sent; nil when there is none.
        var rawNotificationID: String?
        /// Keys matching `n_id`, `title` or `message` after another key already matched the same
        /// name: Java iterates a `HashMap`, so which of them wins is up to hashing. Sorted.
        var ambiguousKeys: [String]

        /// Whether the SDK would throw `NumberFormatException` in `onMessageReceived` (a crash of
        /// the app's messaging service).
        var throwsNumberFormatException: Bool { rawNotificationID != nil && notificationID == nil }
    }

    /// `createNotificationFromMap`, made deterministic: keys are visited in sorted order, so where
    /// two keys match one name the later one in that order wins and both are in `ambiguousKeys`.
    static func createNotificationFromMap(_ data: [String: String]) -> Message {
        var result = Message(notificationID: nil, title: nil, message: nil, deviceProperties: [:], rawNotificationID: nil, ambiguousKeys: [])
        var matched: [String: [String]] = [:]
        for key in data.keys.sorted() {
            let value = data[key] ?? ""
            if equalsIgnoreCase(key, "n_id") {
                matched["n_id", default: []].append(key)
                result.rawNotificationID = value
                result.notificationID = integerValueOf(value)
            } else if equalsIgnoreCase(key, "title") {
                matched["title", default: []].append(key)
                result.title = value
            } else if equalsIgnoreCase(key, "message") {
                matched["message", default: []].append(key)
                result.message = value
            } else {
                result.deviceProperties[key] = value
            }
        }
        result.ambiguousKeys = matched.values.filter { $0.count > 1 }.flatMap { $0 }.sorted()
        return result
    }

    /// `java.lang.Integer.valueOf(String)` (= `parseInt(s, 10)`): an optional `+` or `-`, then
    /// one or more decimal digits, the value within -2^31 … 2^31-1. Java reads UTF-16 units and
    /// takes any Unicode decimal digit (`Character.digit`, general category Nd), not only ASCII.
    /// Nil wherever Java throws `NumberFormatException`.
    static func integerValueOf(_ text: String) -> Int32? {
        let units = Array(text.utf16)
        guard let first = units.first else { return nil }
        var index = 0
        var negative = false
        if first == UInt16(UInt8(ascii: "-")) {
            negative = true
            index = 1
        } else if first == UInt16(UInt8(ascii: "+")) {
            index = 1
        }
        guard index < units.count else { return nil }
        let limit: Int64 = negative ? 2_147_483_648 : 2_147_483_647
        var value: Int64 = 0
        for unit in units[index...] {
            guard let digit = javaDecimalDigit(unit) else { return nil }
            value = value * 10 + digit
            if value > limit { return nil }
        }
        return Int32(negative ? -value : value)
    }

    /// `Character.digit(char, 10)`: the value of a decimal digit of any script; nil otherwise
    /// (a lone surrogate is never a digit).
    private static func javaDecimalDigit(_ unit: UInt16) -> Int64? {
        guard let scalar = Unicode.Scalar(unit) else { return nil }
        if (48...57).contains(unit) { return Int64(unit - 48) }
        guard scalar.properties.generalCategory == .decimalNumber, let value = scalar.properties.numericValue,
            value >= 0, value <= 9, value == value.rounded()
        else { return nil }
        return Int64(value)
    }

    /// `java.lang.String.equalsIgnoreCase`: the same number of UTF-16 units, and each pair equal,
    /// or equal after `Character.toUpperCase`, or after `toLowerCase` of those. So `tıtle` (dotless
    /// ı), `tİtle` (dotted İ) and `meſſage` (long s) all equal their ASCII spelling in Java.
    static func equalsIgnoreCase(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf16), y = Array(b.utf16)
        guard x.count == y.count else { return false }
        for (c1, c2) in zip(x, y) where c1 != c2 {
            let u1 = javaToUpperCase(c1), u2 = javaToUpperCase(c2)
            if u1 == u2 { continue }
            if javaToLowerCase(u1) == javaToLowerCase(u2) { continue }
            return false
        }
        return true
    }

    /// `Character.toUpperCase(char)`: the simple (one to one) mapping; a character whose upper
    /// case is several characters (ß → SS) stays itself.
    private static func javaToUpperCase(_ unit: UInt16) -> UInt16 {
        simpleMapping(unit) { $0.properties.uppercaseMapping }
    }

    /// `Character.toLowerCase(char)`, likewise (İ → i, as Java's simple mapping has it).
    private static func javaToLowerCase(_ unit: UInt16) -> UInt16 {
        if unit == 0x0130 { return 0x0069 }
        return simpleMapping(unit) { $0.properties.lowercaseMapping }
    }

    private static func simpleMapping(_ unit: UInt16, _ mapping: (Unicode.Scalar) -> String) -> UInt16 {
        guard let scalar = Unicode.Scalar(unit) else { return unit }
        let mapped = Array(mapping(scalar).utf16)
        return mapped.count == 1 ? mapped[0] : unit
    }
}

/// The Notifiable iOS SDK 1.2.6 reading an APNs push (`userInfo` is the payload's top-level
/// object: custom keys are peers of `aps`).
///
/// Ports of `+[FWTNotifiableManager isValidNotification:]` and of how
/// `markNotificationAsReceived:` / `markNotificationAsOpened:` turn `n_id` into the status path, in
/// FutureWorkshops/Notifiable-iOS `Notifiable-iOS/FWTNotifiableManager.m` and
/// `Network/FWTRequesterManager.m` (docs/compatibility.md §2): `n_id` is read at the top level of
/// `userInfo` as an `NSNumber` and sent as `[n_id stringValue]`. The alert the system shows is
/// `aps.alert` (title, subtitle, body; or a plain string, which is the body) — Apple's payload
/// format (docs/compatibility.md §8); the SDK itself does not read it.
enum NotifiableIOSSDK {
    /// `isValidNotification`: only that `n_id` is present. A JSON null arrives as `NSNull`, which is
    /// not nil, so it counts as valid too.
    static func isValidNotification(_ userInfo: [String: JSONValue]) -> Bool {
        userInfo["n_id"] != nil
    }

    /// The `n_id` path component of `/api/v1/notifications/<n_id>/delivered` (`[NSNumber
    /// stringValue]`); nil where `n_id` is absent or not an `NSNumber` (a JSON string would be an
    /// `NSString`, which has no public `stringValue`: docs/compatibility.md infers a crash).
    static func notificationIDPathComponent(_ userInfo: [String: JSONValue]) -> String? {
        switch userInfo["n_id"] {
        case .integer(let value)?: return String(value)
        case .number(let value)?: return NSNumber(value: value).stringValue
        case .bool(let value)?: return value ? "1" : "0"
        default: return nil
        }
    }

    /// What the system shows: `aps.alert`.
    struct Alert: Equatable, Sendable {
        var title: String?
        var subtitle: String?
        var body: String?
    }

    /// `aps.alert` as a dictionary of `title`/`subtitle`/`body`, or a string (the body); nil
    /// when there is no alert (a background push).
    static func alert(_ userInfo: [String: JSONValue]) -> Alert? {
        switch userInfo["aps"]?.objectValue?["alert"] {
        case .string(let body)?:
            return Alert(title: nil, subtitle: nil, body: body)
        case .object(let fields)?:
            func text(_ key: String) -> String? {
                if case .string(let value)? = fields[key] { return value }
                return nil
            }
            return Alert(title: text("title"), subtitle: text("subtitle"), body: text("body"))
        default:
            return nil
        }
    }

    /// The payload as `userInfo`; nil when it is not a JSON object.
    static func userInfo(payload: [UInt8]) -> [String: JSONValue]? {
        (try? JSONValue.decode(payload))?.objectValue
    }
}
