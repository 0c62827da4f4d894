import NotifiableCore
import Synchronization
import Testing

@Suite struct DeadlineWatchTests {
    @Test func anOperationThatHangsEndsAtItsDeadlineAndIsCancelled() async throws {
        let watch = DeadlineWatch(tick: .milliseconds(20))
        let cancelled = Flag()
        let start = ContinuousClock.now
        await #expect(throws: DeadlineExceeded.self) {
            try await watch.run(.milliseconds(200)) {
                try? await Task.sleep(for: .seconds(60))
                if Task.isCancelled { cancelled.set() }
            }
        }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(200))
        #expect(elapsed < .seconds(5))
        try await waitUntil { cancelled.isSet }
        #expect(watch.watchedCount == 0)
    }

    @Test func answersComeBackAndLeaveNothingWatched() async throws {
        let watch = DeadlineWatch(tick: .milliseconds(20))
        let values = try await withThrowingTaskGroup(of: Int.self) { group in
            for value in 0..<200 {
                group.addTask { try await watch.run(.seconds(30)) { value * 2 } }
            }
            return try await group.reduce(into: Set<Int>()) { $0.insert($1) }
        }
        #expect(values == Set((0..<200).map { $0 * 2 }))
        #expect(watch.watchedCount == 0)
        await #expect(throws: CodeError.self) {
            try await watch.run(.seconds(30)) { throw CodeError() }
        }
    }

    /// The timer stops when nothing is watched; a later deadline starts it again.
    @Test func aDeadlineAfterAQuietSpellStillPasses() async throws {
        let watch = DeadlineWatch(tick: .milliseconds(20))
        _ = try await watch.run(.seconds(30)) { 1 }
        try await Task.sleep(for: .milliseconds(100))
        await #expect(throws: DeadlineExceeded.self) {
            try await watch.run(.milliseconds(100)) { try? await Task.sleep(for: .seconds(60)) }
        }
    }

    @Test func aCancelledCallerIsAnsweredAtOnce() async throws {
        let watch = DeadlineWatch(tick: .milliseconds(20))
        let caller = Task {
            try await watch.run(.seconds(60)) { try? await Task.sleep(for: .seconds(60)) }
        }
        try await Task.sleep(for: .milliseconds(50))
        let start = ContinuousClock.now
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect(watch.watchedCount == 0)
    }

    struct CodeError: Error {}

    final class Flag: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }

    func waitUntil(_ condition: () -> Bool) async throws {
        let end = ContinuousClock.now + .seconds(5)
        while !condition(), ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(10)) }
        #expect(condition())
    }
}
