/// Reads `authorization: Bearer <token>`, the scheme both APNs (provider JWTs) and Google APIs (access tokens) use.
enum BearerAuthorization {
    /// The token of `authorization: bearer <token>` (scheme in any case, spaces around the token ignored),
    /// or nil when the header is missing, empty or another scheme.
    static func token(_ authorization: String?) -> String? {
        guard let authorization else { return nil }
        let utf8 = authorization.utf8
        var index = utf8.startIndex
        for expected in "bearer ".utf8 {
            guard index != utf8.endIndex, utf8[index] | 0x20 == expected | 0x20 else { return nil }
            index = utf8.index(after: index)
        }
        var end = utf8.endIndex
        while index != end, utf8[index] == UInt8(ascii: " ") { index = utf8.index(after: index) }
        while index != end, utf8[utf8.index(before: end)] == UInt8(ascii: " ") { end = utf8.index(before: end) }
        guard index != end else { return nil }
        return String(authorization[index..<end])
    }
}
