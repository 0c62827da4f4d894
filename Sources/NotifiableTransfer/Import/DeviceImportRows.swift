import Foundation
import NotifiableCore
import NotifiableStore

/// Turns import records into the body `POST /api/v1/device_tokens` would receive, so that rows
/// are validated by the very rules the API applies (`DeviceFields.registration`).
enum DeviceImportRows {
    /// The columns a CSV file may have; the header row names them, in any order.
    static let csvColumns = ["token", "provider", "user_alias", "language", "country", "custom_properties", "name", "tags"]

    /// Checks a CSV header: known columns, each once, token and provider present.
    static func csvHeader(_ fields: [String]) throws -> [String] {
        // Spreadsheet programs often start a UTF-8 CSV with a byte order mark.
        let columns = fields.enumerated().map { index, field in
            (index == 0 && field.hasPrefix("\u{FEFF}") ? String(field.dropFirst()) : field)
                .trimmingCharacters(in: .whitespaces).lowercased()
        }
        let unknown = columns.filter { !csvColumns.contains($0) }
        guard unknown.isEmpty else {
            throw DeviceTransferFailure(
                "Unknown CSV column(s) \(unknown.map { "\"\($0)\"" }.joined(separator: ", ")); the header may name \(csvColumns.joined(separator: ", ")).")
        }
        guard Set(columns).count == columns.count else { throw DeviceTransferFailure("The CSV header names a column twice.") }
        guard columns.contains("token"), columns.contains("provider") else {
            throw DeviceTransferFailure("The CSV header must name at least the token and provider columns.")
        }
        return columns
    }

    /// A CSV row as a registration body. An empty cell counts as a field not given: a missing
    /// user alias anonymises the device (as in the API), other missing fields keep their values.
    /// The tags cell holds the tags separated by spaces (a tag holds none).
    static func csvBody(_ fields: [String], columns: [String]) throws(ValidationError) -> JSONValue {
        guard fields.count == columns.count else {
            throw ValidationError(
                code: "wrong_field_count", message: "The row has \(fields.count) fields; the header names \(columns.count)."
            )
        }
        var object: [String: JSONValue] = [:]
        for (column, value) in zip(columns, fields) where !value.isEmpty {
            object[column] = column == "tags" ? .array(value.split(separator: " ").map { .string(String($0)) }) : .string(value)
        }
        return .object(object)
    }

    /// A JSON line as a registration body.
    static func jsonBody(_ line: String) throws(ValidationError) -> JSONValue {
        guard let value = try? JSONValue.decode(Array(line.utf8)) else {
            throw ValidationError(code: "invalid_json", message: "The line is not valid JSON.")
        }
        return value
    }

    /// A validated registration, or why the row cannot be imported.
    static func registration(_ body: () throws(ValidationError) -> JSONValue) -> Result<DeviceFields, ValidationError> {
        do {
            return .success(try DeviceFields.registration(from: try body()))
        } catch {
            return .failure(error)
        }
    }
}

extension DeviceImportRows {
    /// A notifiable-rails device token as a registration body. notifiable-rails kept a `locale`
    /// (`en` or `en_GB`) before it had `language` and `country`; the locale fills in whichever of
    /// those the row lacks.
    static func railsBody(_ row: NotifiableRailsDevice) throws(ValidationError) -> JSONValue {
        guard row.isValid else {
            throw ValidationError(
                code: "invalid_in_notifiable_rails", message: "notifiable-rails marked the token invalid (is_valid = false)."
            )
        }
        var object: [String: JSONValue] = [:]
        func put(_ key: String, _ value: String?) {
            if let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty { object[key] = .string(value) }
        }
        put("token", row.token)
        put("provider", row.provider)
        put("user_alias", row.userAlias)
        put("name", row.name)
        let locale = (row.locale ?? "").split(whereSeparator: { $0 == "_" || $0 == "-" }).map(String.init)
        put("language", (row.language?.isEmpty ?? true) ? locale.first : row.language)
        put("country", (row.country?.isEmpty ?? true) ? (locale.count > 1 ? locale[1] : nil) : row.country)
        return .object(object)
    }
}
