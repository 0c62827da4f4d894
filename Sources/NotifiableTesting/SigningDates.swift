import Foundation
import Synchronization

/// The Date a test request is signed with when the test names none: now, less a few seconds that
/// differ from one request to the next. A backend signs each request when it sends it, and the
/// service refuses a server request it has already seen (`replayed_request`); a test that sends the
/// same notification twice within one second stands for two sends at two moments, and must not be
/// refused by chance of timing. Tests of replays and of the clock name their dates.
public enum SigningDates {
    private static let counter = Atomic<Int64>(0)

    /// Distinct for 300 consecutive requests, and always within the 15 minutes the API allows.
    public static func next() -> Int64 {
        let offset = counter.add(1, ordering: .relaxed).newValue % 300
        return Int64(Date().timeIntervalSince1970) - offset
    }
}
