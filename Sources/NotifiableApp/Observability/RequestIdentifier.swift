/// The id that ties one request's log lines together. A caller's `X-Request-Id` is kept when it
/// is safe to log and echo (1–128 printable ASCII characters); anything else is replaced by a
/// new random id, so a client cannot inject line breaks or megabytes into the logs.
enum RequestIdentifier {
    static let headerName = "X-Request-Id"
    static let maxLength = 128

    /// The caller's id when it is acceptable, otherwise a new one.
    static func accept(_ header: String?) -> String {
        sanitized(header) ?? generate()
    }

    /// The header's value when it is 1–128 printable ASCII characters (space to `~`), else nil.
    static func sanitized(_ header: String?) -> String? {
        guard let header, !header.isEmpty else { return nil }
        var count = 0
        for byte in header.utf8 {
            count += 1
            guard count <= maxLength, (0x20...0x7E).contains(byte) else { return nil }
        }
        return header
    }

    /// 32 lower-case hex digits from 128 random bits.
    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        return hex(generator.next()) + hex(generator.next())
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
