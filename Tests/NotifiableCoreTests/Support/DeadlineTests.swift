import NotifiableCore
import Synchronization
import Testing

/// An operation that never answers and ignores cancellation, as a query stranded on a closed
/// PostgreSQL connection does, until the test lets it go.
private final class Stranded: Sendable {
    private let waiting = Mutex<[CheckedContinuation<Int, Never>]>([])
    private let started = Atomic<Int>(0)

    var starts: Int { started.load(ordering: .relaxed) }

    func operation() async -> Int {
        started.add(1, ordering: .relaxed)
        return await withCheckedContinuation { continuation in waiting.withLock { $0.append(continuation) } }
    }

    func release() {
        for continuation in waiting.withLock({ waiting in
            defer { waiting = [] }
            return waiting
        }) {
            continuation.resume(returning: 0)
        }
    }
}

/// What `body` threw, if anything, and how long it took.
private func outcome(_ body: () async throws -> Int) async -> (error: (any Error)?, seconds: Double) {
    let start = ContinuousClock.now
    do {
        _ = try await body()
        return (nil, (ContinuousClock.now - start) / .seconds(1))
    } catch {
        return (error, (ContinuousClock.now - start) / .seconds(1))
    }
}

@Suite struct DeadlineTests {
    @Test func anAnswerInTimeIsReturned() async throws {
        #expect(try await withDeadline(.seconds(5)) { 42 } == 42)
    }

    @Test func anOperationPastItsBudgetIsAbandoned() async throws {
        let stranded = Stranded()
        let (error, seconds) = await outcome { try await withDeadline(.milliseconds(200)) { await stranded.operation() } }
        stranded.release()
        #expect(error is DeadlineExceeded, "\(String(describing: error))")
        #expect(seconds < 5)
    }

    @Test func aCancelledCallerStopsWaitingAtOnceEvenForAnOperationThatIgnoresIt() async throws {
        let stranded = Stranded()
        let caller = Task { await outcome { try await withDeadline(.seconds(60)) { await stranded.operation() } } }
        while stranded.starts == 0 { try await Task.sleep(for: .milliseconds(10)) }
        caller.cancel()
        let (error, seconds) = await caller.value
        stranded.release()
        #expect(error is CancellationError, "\(String(describing: error))")
        #expect(seconds < 5, "the caller waited \(seconds) s for an operation it had given up on")
    }

    @Test func aCallerCancelledOnArrivalDoesNotStartTheOperation() async throws {
        let stranded = Stranded()
        let caller = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await outcome { try await withDeadline(.seconds(60)) { await stranded.operation() } }
        }
        let (error, _) = await caller.value
        stranded.release()
        #expect(error is CancellationError, "\(String(describing: error))")
        #expect(stranded.starts == 0)
    }

    @Test func anAnswerGivenBeforeTheContinuationIsInstalledStillReachesIt() async throws {
        let answer = OneAnswer<Int>()
        #expect(answer.preempt(.success(7)))
        #expect(!answer.give(.success(8)), "only the first answer counts")
        let value = try await withCheckedThrowingContinuation { answer.install($0) }
        #expect(value == 7)

        let ran = Atomic<Bool>(false)
        answer.onTimeout { ran.store(true, ordering: .relaxed) }
        let actionRan = ran.load(ordering: .relaxed)
        #expect(actionRan, "a timeout action set after the preempting answer runs at once")
    }
}
