import Synchronization

/// `withDeadline`'s error when the budget passed before the operation answered.
public struct DeadlineExceeded: Error {
    public init() {}
}

/// Runs `operation`, giving up after `budget`, or at once when the caller is cancelled. The
/// operation runs in a task of its own that is cancelled and left behind when the deadline passes,
/// rather than awaited as a task group would: a query written to a PostgreSQL connection at the
/// moment it closes is never answered (postgres-nio 1.33 fails the write but not the query), and
/// waiting for it would hang the caller. A cancelled caller (a worker told to stop) gets
/// `CancellationError` without waiting for such a query either.
///
/// `late` receives a value the operation produced after the deadline had answered, so that what
/// must be closed (a connection) is closed rather than dropped.
public func withDeadline<T: Sendable>(
    _ budget: Duration, _ operation: @escaping @Sendable () async throws -> T, late: (@Sendable (T) -> Void)? = nil
) async throws -> T {
    try await runAbandoningAtDeadline(operation, late: late) { expire in
        let timer = Task {
            try? await Task.sleep(for: budget)
            guard !Task.isCancelled else { return }
            expire()
        }
        return { timer.cancel() }
    }
}

/// The part `withDeadline` and `DeadlineWatch` share: `operation` runs in a task of its own, and
/// the caller gets whichever comes first of its answer, the deadline (`DeadlineExceeded`) or its
/// own cancellation. `arm` starts the timer, which calls `expire` when the deadline passes, and
/// returns what stops it.
func runAbandoningAtDeadline<T: Sendable>(
    _ operation: @escaping @Sendable () async throws -> T, late: (@Sendable (T) -> Void)?,
    arm: (_ expire: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)
) async throws -> T {
    try Task.checkCancellation()
    let answer = OneAnswer<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            answer.install(continuation)
            let disarm = arm { answer.preempt(.failure(DeadlineExceeded())) }
            let work = Task {
                let result: Result<T, any Error>
                do {
                    result = .success(try await operation())
                } catch {
                    result = .failure(error)
                }
                // Disarmed before the caller has its answer, so nothing stays watched after it.
                disarm()
                if !answer.give(result), case .success(let value) = result { late?(value) }
            }
            answer.onTimeout {
                work.cancel()
                disarm()
            }
        }
    } onCancel: {
        answer.preempt(.failure(CancellationError()))
    }
}

/// A continuation resumed once, by whichever answer comes first (the operation's own, a deadline,
/// a rescue, a cancellation). An answer may come before the continuation is installed (a caller
/// cancelled on arrival); the continuation then gets it as soon as it is installed.
public final class OneAnswer<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var early: Result<T, any Error>?
        var answered = false
        var preempted = false
        var onTimeout: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    public init() {}

    public func install(_ continuation: CheckedContinuation<T, any Error>) {
        let early = state.withLock { state -> Result<T, any Error>? in
            guard let early = state.early else {
                state.continuation = continuation
                return nil
            }
            state.early = nil
            return early
        }
        if let early { continuation.resume(with: early) }
    }

    /// What to do when the answer given first is not the operation's own (a deadline, a rescue, a
    /// cancellation); run at once if that answer came already.
    public func onTimeout(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard !state.preempted else { return true }
            state.onTimeout = action
            return false
        }
        if runNow { action() }
    }

    /// Resumes the continuation unless an answer came already; true when this answer was first.
    @discardableResult
    public func give(_ result: Result<T, any Error>) -> Bool {
        let (first, continuation) = state.withLock { state -> (Bool, CheckedContinuation<T, any Error>?) in
            guard !state.answered else { return (false, nil) }
            state.answered = true
            guard let continuation = state.continuation else {
                state.early = result
                return (true, nil)
            }
            state.continuation = nil
            return (true, continuation)
        }
        continuation?.resume(with: result)
        return first
    }

    /// Gives `result` in place of the operation's answer and runs the timeout action.
    @discardableResult
    public func preempt(_ result: Result<T, any Error>) -> Bool {
        guard give(result) else { return false }
        let action = state.withLock { state -> (@Sendable () -> Void)? in
            state.preempted = true
            defer { state.onTimeout = nil }
            return state.onTimeout
        }
        action?()
        return true
    }
}
