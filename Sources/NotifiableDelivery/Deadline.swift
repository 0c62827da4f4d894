import Synchronization

/// Runs `operation` and answers its result, or nil once `budget` has passed, whichever comes
/// first. Unlike a task group, it does not wait for an operation that ignores cancellation (a
/// key being generated, a shared exchange): that one is cancelled and left to finish alone.
func withDeadline<Value: Sendable>(_ budget: Duration, _ operation: @escaping @Sendable () async -> Value) async -> Value? {
    let answered = FirstAnswer<Value?>()
    return await withCheckedContinuation { continuation in
        answered.install(continuation)
        let work = Task { answered.give(await operation()) }
        let timer = Task {
            try? await Task.sleep(for: budget)
            guard !Task.isCancelled else { return }
            if answered.give(nil) { work.cancel() }
        }
        answered.onAnswer { timer.cancel() }
    }
}

/// A continuation resumed once, by whichever answer comes first.
private final class FirstAnswer<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, Never>?
        var answered = false
        var whenAnswered: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    func install(_ continuation: CheckedContinuation<Value, Never>) {
        state.withLock { $0.continuation = continuation }
    }

    /// Runs `action` once an answer is given (at once if one was).
    func onAnswer(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.answered { return true }
            state.whenAnswered = action
            return false
        }
        if now { action() }
    }

    /// True when this was the first answer.
    @discardableResult
    func give(_ value: Value) -> Bool {
        let taken = state.withLock { state -> (CheckedContinuation<Value, Never>, (@Sendable () -> Void)?)? in
            guard !state.answered, let continuation = state.continuation else { return nil }
            state.answered = true
            state.continuation = nil
            defer { state.whenAnswered = nil }
            return (continuation, state.whenAnswered)
        }
        guard let (continuation, whenAnswered) = taken else { return false }
        continuation.resume(returning: value)
        whenAnswered?()
        return true
    }
}
