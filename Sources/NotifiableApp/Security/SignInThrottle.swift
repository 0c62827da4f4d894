import Foundation
import Logging
import Synchronization

/// Slows guessing of the admin token: a client whose attempts failed `limit` times within
/// `window` is refused (429 with Retry-After) until the oldest of them leaves the window, even
/// with the right token. Kept in the process: each API process counts its own, so N processes
/// allow N times the attempts, still far too few for a token of 128 bits or more.
final class SignInThrottle: Sendable {
    let limit: Int
    let window: TimeInterval
    /// Most clients remembered: past it, those whose failures left the window are forgotten, and
    /// if all are recent, everyone is (memory stays bounded whoever is guessing).
    let maxClients: Int
    private let failures = Mutex<[String: [Date]]>([:])

    init(limit: Int = 10, window: TimeInterval = 60, maxClients: Int = 100_000) {
        self.limit = limit
        self.window = window
        self.maxClients = maxClients
    }

    /// Seconds `client` must wait before trying again; nil when it may try now.
    func retryAfter(_ client: String, now: Date = Date()) -> Int? {
        failures.withLock { all in
            let recent = (all[client] ?? []).filter { now.timeIntervalSince($0) < window }
            all[client] = recent.isEmpty ? nil : recent
            guard recent.count >= limit, let oldest = recent.first else { return nil }
            return max(1, Int((window - now.timeIntervalSince(oldest)).rounded(.up)))
        }
    }

    /// How many clients are remembered (for tests).
    var clientCount: Int { failures.withLock { $0.count } }

    /// Counts a failed attempt; answers how many `client` has within the window.
    @discardableResult
    func fail(_ client: String, now: Date = Date()) -> Int {
        count(client, now: now, unlessWaiting: false) ?? limit
    }

    /// Counts an attempt as failed before it is checked, so that attempts in flight together count
    /// together (a check that takes time, a password's, would otherwise let any number through at
    /// once); `forgive` takes it back when it succeeds. Nil, and nothing counted, when `client`
    /// must wait (for `retryAfter`'s seconds).
    func attempt(_ client: String, logger: Logger, what: String, now: Date = Date()) -> Date? {
        guard let failures = count(client, now: now, unlessWaiting: true) else { return nil }
        if failures == limit { warn(client, logger: logger, what: what) }
        return now
    }

    /// Takes back the failure `attempt` counted at `at`, the attempt having succeeded.
    func forgive(_ client: String, at: Date) {
        failures.withLock { all in
            guard var recent = all[client], let index = recent.lastIndex(of: at) else { return }
            recent.remove(at: index)
            all[client] = recent.isEmpty ? nil : recent
        }
    }

    /// Counts a failed attempt and logs, at warning, the one that makes `client` wait.
    func failed(_ client: String, logger: Logger, what: String) {
        if fail(client) == limit { warn(client, logger: logger, what: what) }
    }

    /// Adds a failure at `now`, in one step with the check whether `client` must wait when
    /// `unlessWaiting` (then nil, nothing added); answers the failures within the window.
    private func count(_ client: String, now: Date, unlessWaiting: Bool) -> Int? {
        failures.withLock { all in
            var recent = (all[client] ?? []).filter { now.timeIntervalSince($0) < window }
            if unlessWaiting, recent.count >= limit {
                all[client] = recent
                return nil
            }
            recent.append(now)
            // Bounded memory whoever calls: the oldest beyond the limit no longer matter.
            if recent.count > limit { recent.removeFirst(recent.count - limit) }
            all[client] = recent
            if all.count > maxClients {
                all = all.filter { now.timeIntervalSince($0.value.last ?? .distantPast) < window }
                if all.count > maxClients { all = [client: recent] }
            }
            return recent.count
        }
    }

    private func warn(_ client: String, logger: Logger, what: String) {
        logger.warning(
            "repeated failed sign-ins; refusing the client for a while",
            metadata: [
                "client": "\(client)", "failures": "\(limit)", "window_seconds": "\(Int(window))", "credential": "\(what)",
            ])
    }
}
