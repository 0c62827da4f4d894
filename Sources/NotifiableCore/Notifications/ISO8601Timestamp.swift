/// ISO 8601 / RFC 3339 date-times as clients send them: `2026-11-22T10:00:00Z`,
/// `2026-11-22T10:00:00.250+01:00`. Parsed by hand, like `HTTPDate`.
enum ISO8601Timestamp {
    /// 9999-12-31T23:59:59Z.
    static let latestSecondsSince1970: Double = 253_402_300_799

    /// Seconds since 1970-01-01T00:00:00Z, or nil when `text` is not a complete date-time with a
    /// time zone (`Z`, `±hh:mm`, `±hhmm` or `±hh`). `T` may be lower case or a space; the
    /// fraction may use `.` or `,`.
    static func secondsSince1970(_ text: String) -> Double? {
        parse(text, zone: .required)
    }

    /// A wall-clock date-time without a time zone (`2026-11-23T08:00:00`), as the seconds since
    /// 1970 it would be in UTC; nil for anything else, a date-time with a zone included.
    static func localSecondsSince1970(_ text: String) -> Double? {
        parse(text, zone: .forbidden)
    }

    private enum ZoneRule { case required, forbidden }

    private static func parse(_ text: String, zone: ZoneRule) -> Double? {
        let bytes = Array(text.utf8)
        var index = 0

        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        func number(_ count: Int) -> Int64? {
            guard index + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + count] {
                guard isDigit(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            index += count
            return value
        }
        func skip(_ allowed: String) -> Bool {
            guard index < bytes.count, allowed.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }

        guard let year = number(4), skip("-"), let month = number(2), skip("-"), let day = number(2),
            skip("Tt "), let hour = number(2), skip(":"), let minute = number(2), skip(":"),
            let second = number(2)
        else { return nil }

        var fraction = 0.0
        if skip(".,") {
            let start = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            guard index > start, let value = Double("0." + String(decoding: bytes[start..<index], as: UTF8.self)) else {
                return nil
            }
            fraction = value
        }

        var offset: Int64 = 0
        if zone == .forbidden {
            guard index == bytes.count else { return nil }
        } else if index == bytes.count {
            return nil
        } else if skip("Zz") {
            offset = 0
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let offsetHours = number(2), offsetHours <= 23 else { return nil }
            var offsetMinutes: Int64 = 0
            if index < bytes.count {
                _ = skip(":")
                guard let minutes = number(2), minutes <= 59 else { return nil }
                offsetMinutes = minutes
            }
            offset = sign * (offsetHours * 3_600 + offsetMinutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }

        guard (1...12).contains(month), (1...31).contains(day), hour <= 23, minute <= 59, second <= 60 else {
            return nil
        }
        let days = HTTPDate.daysFromCivil(year: year, month: month, day: day)
        // 31 Feb would silently become 3 Mar: refuse days the month does not have.
        guard HTTPDate.civilFromDays(days) == (year, month, day) else { return nil }
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset
        return Double(seconds) + fraction
    }
}
