import NotifiableCore
import Synchronization
import Testing

/// Permits: at most `limit` at once, the rest in turn; with `waitingBehind:`, turned away past
/// that many waiting.
@Suite struct PermitsTests {
    final class Tally: Sendable {
        let state = Mutex((running: 0, most: 0, done: 0))
        func enter() {
            state.withLock {
                $0.running += 1
                $0.most = max($0.most, $0.running)
            }
        }
        func leave() {
            state.withLock {
                $0.running -= 1
                $0.done += 1
            }
        }
    }

    @Test(.timeLimit(.minutes(1))) func noMoreThanTheLimitRunAtOnceAndEveryOneRuns() async {
        let permits = Permits(limit: 2)
        let tally = Tally()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    await permits.withPermit {
                        tally.enter()
                        try? await Task.sleep(for: .milliseconds(5))
                        tally.leave()
                    }
                }
            }
        }
        let (_, most, done) = tally.state.withLock { $0 }
        #expect(most <= 2 && most >= 1)
        #expect(done == 12)
    }

    @Test(.timeLimit(.minutes(1))) func pastTheWaitingLimitOneIsTurnedAwayAtOnce() async throws {
        let permits = Permits(limit: 1)
        let (started, release) = AsyncStream.makeStream(of: Void.self)
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        // One holds the permit until told, one waits behind it.
        let holder = Task {
            try await permits.withPermit(waitingBehind: 0) {
                release.yield()
                for await _ in gate { break }
            }
        }
        for await _ in started { break }
        let waiter = Task { try await permits.withPermit(waitingBehind: 1) { "waited" } }
        while permits.waiting < 1 { try await Task.sleep(for: .milliseconds(5)) }
        await #expect(throws: Permits.Full.self) { try await permits.withPermit(waitingBehind: 1) { "refused" } }
        open.yield()
        try await holder.value
        #expect(try await waiter.value == "waited")
        #expect(try await permits.withPermit(waitingBehind: 0) { "free again" } == "free again")
        // A permit comes back when its operation throws.
        struct Failed: Error {}
        await #expect(throws: Failed.self) { try await permits.withPermit(waitingBehind: 0) { throw Failed() } }
        #expect(try await permits.withPermit(waitingBehind: 0) { "after a failure" } == "after a failure")
    }
}
