/// The push services a browser's subscription may point at. An endpoint is a URL the caller
/// supplies, and the service POSTs to it: only the browsers' own push services are taken, so a
/// registration can never make the service send requests to a host of the caller's choosing
/// (docs/compatibility.md lists each host and where it comes from).
public struct WebPushHosts: Sendable, Equatable {
    /// Each an exact host name, or `*.` and a suffix that matches any name under it.
    public let patterns: [String]

    public init(patterns: [String]) {
        self.patterns = patterns.map { $0.lowercased() }
    }

    /// Chrome and other Chromium browsers (Firebase), Firefox (Mozilla's autopush), Safari (Apple)
    /// and Edge (Windows Push Notification Services).
    public static let browsers = WebPushHosts(patterns: [
        "fcm.googleapis.com", "updates.push.services.mozilla.com", "*.push.apple.com",
        "*.notify.windows.com",
    ])

    /// Reads `NOTIFIABLE_WEBPUSH_ALLOWED_HOSTS`: host names or `*.suffix` patterns, separated by
    /// commas. Nil when one is not a host name (a port is refused: hosts are matched without one).
    public init?(list: String) {
        let patterns = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !patterns.isEmpty, patterns.allSatisfy(Self.isPattern) else { return nil }
        self.init(patterns: patterns)
    }

    public func allows(host: String) -> Bool {
        let host = host.lowercased()
        return patterns.contains { pattern in
            if pattern.hasPrefix("*.") { return host.hasSuffix(pattern.dropFirst(1)) && host.count > pattern.count - 1 }
            return host == pattern
        }
    }

    private static func isPattern(_ text: String) -> Bool {
        let name = text.hasPrefix("*.") ? String(text.dropFirst(2)) : text
        return !name.isEmpty
            && name.utf8.allSatisfy { byte in
                (97...122).contains(byte) || (65...90).contains(byte) || (48...57).contains(byte) || byte == 45 || byte == 46
            }
    }
}
