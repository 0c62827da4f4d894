/// RFC 1123 dates as sent in the `Date` header (`Sun, 22 Nov 2026 06:01:44 GMT`).
/// Parsed by hand: DateFormatter is slow and not safe to share across tasks.
public enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday

    /// Seconds since 1970-01-01T00:00:00Z, or nil when `text` is not an RFC 1123 GMT date.
    public static func parse(_ text: String) -> Int64? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT" || parts[5] == "UTC",
            let day = Int64(parts[1]), (1...31).contains(day),
            let monthIndex = months.firstIndex(of: String(parts[2])),
            let year = Int64(parts[3]), (1970...9999).contains(year)
        else { return nil }
        let time = parts[4].split(separator: ":")
        guard time.count == 3,
            let hour = Int64(time[0]), (0...23).contains(hour),
            let minute = Int64(time[1]), (0...59).contains(minute),
            let second = Int64(time[2]), (0...60).contains(second)
        else { return nil }
        let days = daysFromCivil(year: year, month: Int64(monthIndex + 1), day: day)
        // 31 Feb would silently become 3 Mar: refuse days the month does not have.
        guard civilFromDays(days) == (year, Int64(monthIndex + 1), day) else { return nil }
        return days * 86_400 + hour * 3_600 + minute * 60 + second
    }

    /// Formats seconds since 1970 as an RFC 1123 GMT date.
    public static func format(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civilFromDays(days)
        let weekday = weekdays[Int(((days % 7) + 7) % 7)]
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(weekday), \(two(day)) \(months[Int(month - 1)]) \(year) "
            + "\(two(secondOfDay / 3_600)):\(two(secondOfDay % 3_600 / 60)):\(two(secondOfDay % 60)) GMT"
    }

    // Howard Hinnant's days-from-civil algorithm (proleptic Gregorian calendar).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
