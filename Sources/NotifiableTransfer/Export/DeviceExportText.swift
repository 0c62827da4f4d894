import Foundation
import NotifiableCore
import NotifiableStore

/// Devices as export lines; the columns and keys are those `devices import` reads. A browser's
/// subscription keys go in JSON lines only: CSV has no column for them.
enum DeviceExportText {
    static let csvHeader = "token,provider,user_alias,language,country,custom_properties,name,tags"

    static func csv(_ device: ExportedDevice) -> String {
        let custom = device.customProperties == "{}" ? "" : device.customProperties
        // Tags hold no spaces, so one cell holds them all, space-separated.
        return [
            device.token, device.provider.rawValue, device.userAlias ?? "", device.language ?? "", device.country ?? "", custom,
            device.name ?? "", device.tags.joined(separator: " "),
        ].map(csvField).joined(separator: ",")
    }

    /// Quoted when it holds a comma, quote, line break or edge spaces (RFC 4180).
    static func csvField(_ value: String) -> String {
        // By scalar: "\r\n" is one Character, equal to neither "\r" nor "\n".
        let needsQuotes =
            value.unicodeScalars.contains { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }
            || value.first == " " || value.last == " "
        return needsQuotes ? "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : value
    }

    static func jsonLine(_ device: ExportedDevice) -> String {
        var object: [String: JSONValue] = ["token": .string(device.token), "provider": .string(device.provider.rawValue)]
        if let alias = device.userAlias { object["user_alias"] = .string(alias) }
        if let language = device.language { object["language"] = .string(language) }
        if let country = device.country { object["country"] = .string(country) }
        if let name = device.name { object["name"] = .string(name) }
        if !device.tags.isEmpty { object["tags"] = .array(device.tags.map(JSONValue.string)) }
        if let custom = try? JSONValue.decode(Array(device.customProperties.utf8)), custom != .object([:]) {
            object["custom_properties"] = custom
        }
        if let keys = device.pushKeys { object["keys"] = .object(["p256dh": .string(keys.p256dh), "auth": .string(keys.auth)]) }
        return JSONValue.object(object).jsonText()
    }
}
