import Synchronization

/// At most `limit` operations at once; the others wait their turn, first come first served. An
/// operation that would rather not wait behind a long queue says how many it accepts before it
/// (`waitingBehind:`), and past that is turned away at once with `Permits.Full`. A waiting task
/// that is cancelled keeps its place: what waits here is short, and leaving would need the lock
/// to find it.
public final class Permits: Sendable {
    public struct Full: Error {}

    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Bool, Never>] = []
    }

    private let state: Mutex<State>

    public init(limit: Int) {
        state = Mutex(State(available: max(1, limit)))
    }

    /// Runs `operation` once a permit is free, and frees it afterwards.
    public func withPermit<Value: Sendable>(_ operation: () async -> Value) async -> Value {
        _ = await acquire(waitingBehind: nil)
        defer { release() }
        return await operation()
    }

    /// The same, turned away with `Full` instead when `maxWaiting` wait already.
    public func withPermit<Value: Sendable>(waitingBehind maxWaiting: Int, _ operation: () async throws -> Value) async throws -> Value {
        guard await acquire(waitingBehind: maxWaiting) else { throw Full() }
        defer { release() }
        return try await operation()
    }

    /// Takes a free permit without waiting, for an operation that outlives one scope (a streamed
    /// answer); false when none is free. Whoever took it gives it back with `release()`, once.
    public func tryTake() -> Bool {
        state.withLock { state in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
    }

    /// How many wait for a permit now.
    public var waiting: Int { state.withLock { $0.waiters.count } }

    /// Takes a permit, waiting for one when none is free; false (nothing taken) when `maxWaiting`
    /// wait already.
    private func acquire(waitingBehind maxWaiting: Int?) async -> Bool {
        enum Turn { case now, wait, refuse }
        func turn(_ state: inout State) -> Turn {
            if state.available > 0 {
                state.available -= 1
                return .now
            }
            if let maxWaiting, state.waiters.count >= maxWaiting { return .refuse }
            return .wait
        }
        switch state.withLock({ turn(&$0) }) {
        case .now: return true
        case .refuse: return false
        case .wait:
            return await withCheckedContinuation { continuation in
                // Asked again under the lock that hands turns out: a permit may have come free,
                // or the queue filled, since.
                let now = state.withLock { state -> Turn in
                    let again = turn(&state)
                    if again == .wait { state.waiters.append(continuation) }
                    return again
                }
                switch now {
                case .now: continuation.resume(returning: true)
                case .refuse: continuation.resume(returning: false)
                case .wait: break
                }
            }
        }
    }

    /// Gives a permit back: to the longest waiter, or to the free ones.
    public func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            // A freed permit goes straight to the longest waiter.
            guard !state.waiters.isEmpty else {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume(returning: true)
    }
}
