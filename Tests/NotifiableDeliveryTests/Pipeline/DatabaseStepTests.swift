import Synchronization
import Testing

@testable import NotifiableDelivery

/// A wait that ignores cancellation, as a query stranded on a closed connection does, until opened.
private final class Gate: Sendable {
    private let waiting = Mutex<CheckedContinuation<Void, Never>?>(nil)

    func wait() async {
        await withCheckedContinuation { continuation in waiting.withLock { $0 = continuation } }
    }

    func open() {
        waiting.withLock {
            $0?.resume()
            $0 = nil
        }
    }
}

struct DatabaseStepTests {
    private struct Refused: Error, Equatable {}

    @Test func aStepThatNeverAnswersIsAbandonedAtItsDeadline() async throws {
        let gate = Gate()
        let clock = ContinuousClock()
        let started = clock.now
        do {
            _ = try await databaseStep("claiming deliveries", deadline: .milliseconds(200)) {
                await gate.wait()
                return 1
            }
            Issue.record("a step that never answered returned")
        } catch let error as DatabaseStepTimedOut {
            #expect(error.step == "claiming deliveries")
            #expect(error.description.contains("claiming deliveries did not answer within"))
        }
        let elapsed = started.duration(to: clock.now)
        #expect(elapsed >= .milliseconds(190))
        #expect(elapsed < .seconds(5), "took \(elapsed)")
        gate.open()
    }

    @Test func aStepsAnswerAndErrorPassThrough() async throws {
        let answer = try await databaseStep("recording a batch", deadline: .seconds(10)) { 42 }
        #expect(answer == 42)
        await #expect(throws: Refused.self) {
            _ = try await databaseStep("recording a batch", deadline: .seconds(10)) { () async throws -> Int in throw Refused() }
        }
    }
}
