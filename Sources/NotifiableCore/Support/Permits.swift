import Synchronization

/// At most `limit` operations at once; the others wait their turn, first come first served. An
/// operation that would rather not wait behind a long queue says how many it accepts before it
/// (`waitingBehind:`), and past that is turned away at once with `Permits.Full`.
public final class Permits: Sendable {
    public struct Full: Error {}

    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    public init(limit: Int) {
        state = Mutex(State(available: max(1, limit)))
    }

    /// Runs `operation` once a permit is free, and frees it afterwards.
    public func withPermit<Value: Sendable>(_ operation: () async -> Value) async -> Value {
        // Without a limit on waiting, acquiring cannot be refused.
        try? await acquire(waitingBehind: nil)
        defer { release() }
        return await operation()
    }

    /// The same, turned away with `Full` instead when more than `maxWaiting` wait already.
    public func withPermit<Value: Sendable>(waitingBehind maxWaiting: Int, _ operation: () async throws -> Value) async throws -> Value {
        try await acquire(waitingBehind: maxWaiting)
        defer { release() }
        return try await operation()
    }

    private func acquire(waitingBehind maxWaiting: Int?) async throws {
        enum Turn { case now, wait, refuse }
        let turn = state.withLock { state -> Turn in
            if state.available > 0 {
                state.available -= 1
                return .now
            }
            return maxWaiting.map { state.waiters.count < $0 } == false ? .refuse : .wait
        }
        switch turn {
        case .now: return
        case .refuse: throw Full()
        case .wait:
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    // A permit may have come free since the check above.
                    if state.available > 0 {
                        state.available -= 1
                        return true
                    }
                    state.waiters.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            // A freed permit goes straight to the longest waiter.
            guard !state.waiters.isEmpty else {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
