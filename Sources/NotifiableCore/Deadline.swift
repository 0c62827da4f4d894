import Synchronization

/// `withDeadline`'s error when the budget passed before the operation answered.
public struct DeadlineExceeded: Error {
    public init() {}
}

/// Runs `operation`, giving up after `budget`. The operation runs in a task of its own that is
/// cancelled and left behind when the deadline passes, rather than awaited as a task group
/// would: a query written to a PostgreSQL connection at the moment it closes is never answered
/// (postgres-nio 1.33 fails the write but not the query), and waiting for it would hang the caller.
///
/// `late` receives a value the operation produced after the deadline had answered, so that what
/// must be closed (a connection) is closed rather than dropped.
public func withDeadline<T: Sendable>(
    _ budget: Duration, _ operation: @escaping @Sendable () async throws -> T, late: (@Sendable (T) -> Void)? = nil
) async throws -> T {
    let answer = OneAnswer<T>()
    return try await withCheckedThrowingContinuation { continuation in
        answer.install(continuation)
        let timer = Task {
            try? await Task.sleep(for: budget)
            guard !Task.isCancelled else { return }
            answer.preempt(.failure(DeadlineExceeded()))
        }
        let work = Task {
            do {
                let value = try await operation()
                if !answer.give(.success(value)) { late?(value) }
            } catch {
                answer.give(.failure(error))
            }
            timer.cancel()
        }
        answer.onTimeout { work.cancel() }
    }
}

/// A continuation resumed once, by whichever answer comes first (the operation's own, a deadline, a rescue).
public final class OneAnswer<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var answered = false
        var onTimeout: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    public init() {}

    public func install(_ continuation: CheckedContinuation<T, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    /// What to do when the answer given first is not the operation's own (a deadline, a rescue).
    public func onTimeout(_ action: @escaping @Sendable () -> Void) {
        state.withLock { $0.onTimeout = action }
    }

    /// Resumes the continuation unless it was resumed already; true when this answer was first.
    @discardableResult
    public func give(_ result: Result<T, any Error>) -> Bool {
        let continuation = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard !state.answered else { return nil }
            state.answered = true
            defer { state.continuation = nil }
            return state.continuation
        }
        guard let continuation else { return false }
        continuation.resume(with: result)
        return true
    }

    /// Gives `result` in place of the operation's answer and runs the timeout action.
    @discardableResult
    public func preempt(_ result: Result<T, any Error>) -> Bool {
        guard give(result) else { return false }
        state.withLock { state in defer { state.onTimeout = nil }; return state.onTimeout }?()
        return true
    }
}
