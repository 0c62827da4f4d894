import Foundation
import Synchronization

/// The Date a test request is signed with when the test names none. A backend signs each request
/// when it sends it, and the service refuses a server request it has already seen
/// (`replayed_request`); a test that sends the same notification twice within one second stands for
/// two sends at two moments, and must not be refused by chance of timing. So a request is signed
/// now, unless the same request (credential, method, path, body) was signed before at that second
/// or later: then a second before the last. Tests of replays and of the clock name their dates.
public enum SigningDates {
    private static let last = Mutex<[String: Int64]>([:])

    public static func date(accessID: String, method: String, path: String, body: some Sequence<UInt8>) -> Int64 {
        let now = Int64(Date().timeIntervalSince1970)
        let key = "\(accessID) \(method) \(path) \(Array(body).hashValue)"
        return last.withLock { last in
            let date = last[key].map { min(now, $0 - 1) } ?? now
            last[key] = date
            return date
        }
    }
}
