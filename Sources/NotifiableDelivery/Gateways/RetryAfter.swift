import Foundation
import NotifiableCore

/// A gateway's `Retry-After`: delta-seconds ("120") or an HTTP-date (`Sun, 22 Nov 2026 06:01:44
/// GMT`, counted from `now`, zero when past); nil when absent or unreadable.
public enum RetryAfter {
    public static func duration(_ value: String?, now: Date = Date()) -> Duration? {
        if let seconds = APNsResponseClassifier.parseRetryAfter(value) { return seconds }
        guard let text = value?.trimmingCharacters(in: .whitespaces), let date = HTTPDate.parse(text) else { return nil }
        let seconds = max(0, Double(date) - now.timeIntervalSince1970)
        return .seconds(Int64(seconds.rounded(.up)))
    }
}
