import Synchronization

/// `withDeadline` for operations that run by the thousand: one timer checks every deadline once a
/// tick, where `withDeadline` starts a sleeping timer task per call. For every message to FCM that
/// timer was a tenth of a sending worker's CPU. A deadline here passes up to one tick late.
public final class DeadlineWatch: Sendable {
    private struct Watched {
        let deadline: ContinuousClock.Instant
        let expire: @Sendable () -> Void
    }

    private struct State {
        var nextID: UInt64 = 0
        var watched: [UInt64: Watched] = [:]
        var ticking = false
    }

    private let state = Mutex(State())
    private let tick: Duration

    /// - Parameter tick: how often deadlines are checked (at least a millisecond).
    public init(tick: Duration = .milliseconds(100)) {
        self.tick = max(tick, .milliseconds(1))
    }

    /// Operations whose deadline is being watched now.
    public var watchedCount: Int { state.withLock { $0.watched.count } }

    /// Runs `operation`, throwing `DeadlineExceeded` once `budget` has passed (within a tick), or
    /// `CancellationError` at once when the caller is cancelled. As with `withDeadline`, an
    /// operation that outlives its deadline is cancelled and left behind, not awaited.
    public func run<T: Sendable>(_ budget: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        try await runAbandoningAtDeadline(operation, late: nil) { expire in
            let id = watch(until: .now + budget, expire: expire)
            return { self.unwatch(id) }
        }
    }

    private func watch(until deadline: ContinuousClock.Instant, expire: @escaping @Sendable () -> Void) -> UInt64 {
        let (id, startTicking) = state.withLock { state -> (UInt64, Bool) in
            state.nextID += 1
            state.watched[state.nextID] = Watched(deadline: deadline, expire: expire)
            defer { state.ticking = true }
            return (state.nextID, !state.ticking)
        }
        if startTicking {
            Task { await self.tickWhileWatching() }
        }
        return id
    }

    private func unwatch(_ id: UInt64) {
        _ = state.withLock { $0.watched.removeValue(forKey: id) }
    }

    /// Ticks while anything is watched, then stops until the next `watch` starts it again.
    private func tickWhileWatching() async {
        while true {
            try? await Task.sleep(for: tick)
            let now = ContinuousClock.now
            let (expired, idle) = state.withLock { state -> ([Watched], Bool) in
                let expired = state.watched.filter { $0.value.deadline <= now }
                for id in expired.keys { state.watched[id] = nil }
                if state.watched.isEmpty { state.ticking = false }
                return (Array(expired.values), !state.ticking)
            }
            for watched in expired { watched.expire() }
            if idle { return }
        }
    }
}
