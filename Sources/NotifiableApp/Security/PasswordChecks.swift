import Dispatch
import NIOCore
import NotifiableCore
import Synchronization

/// Checks operators' passwords a few at a time, off the threads that answer requests. A check is
/// scrypt (about 0.1 s and 32 MiB), and Swift runs tasks on one thread per core: a burst of
/// sign-ins checked there would stall every request and the delivery workers of the process. So
/// at most `concurrent` checks run at once, on Dispatch's threads, `queued` more wait their turn,
/// and past that a sign-in is turned away at once (`Busy`) instead of waiting behind them.
final class PasswordChecks: Sendable {
    struct Busy: Error {}

    let concurrent: Int
    let queued: Int
    private let state = Mutex<(running: Int, waiting: [CheckedContinuation<Void, Never>])>((0, []))

    init(concurrent: Int = max(1, System.coreCount), queued: Int = 16) {
        self.concurrent = concurrent
        self.queued = queued
    }

    /// Whether `password` is the one `hash` was made from.
    func matches(_ password: String, _ hash: PasswordHash) async throws -> Bool {
        try await run { hash.matches(password) }
    }

    /// A new hash of `password`, made the same way: an owner adding operators may not stall sign-ins either.
    func hash(_ password: String) async throws -> PasswordHash {
        try await run { Result(catching: { try PasswordHash.make(password) }) }.get()
    }

    private func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async { continuation.resume(returning: work()) }
        }
    }

    private func acquire() async throws {
        enum Turn { case now, wait, refuse }
        let turn = state.withLock { state -> Turn in
            if state.running < concurrent {
                state.running += 1
                return .now
            }
            return state.waiting.count < queued ? .wait : .refuse
        }
        switch turn {
        case .now: return
        case .refuse: throw Busy()
        case .wait:
            // Appended under the same lock that `release` hands turns out under; the turn is ours
            // once resumed (`running` counts it already).
            await withCheckedContinuation { continuation in
                let admitted = state.withLock { state -> Bool in
                    if state.running < concurrent {
                        state.running += 1
                        return true
                    }
                    state.waiting.append(continuation)
                    return false
                }
                if admitted { continuation.resume() }
            }
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
