import Foundation
import Synchronization

/// What the stages of one running worker share: the bells that wake them and the flag that
/// stops them. Stopping rings every bell, so no stage sleeps through it.
final class WorkerRun: Sendable {
    /// Rung when there may be work: PostgreSQL's NOTIFY, a fan-out batch written, work rescued.
    let work = Doorbell()
    /// Rung only to stop: maintenance keeps its own pace, not the pace of work arriving.
    let maintenance = Doorbell()
    /// Rung when a broadcast channel is asked for or a broadcast queued (`WorkerWake.channels`).
    let channels = Doorbell()
    private let stopped = Mutex(false)
    private let stepDeadline: Duration

    init(stepDeadline: Duration) {
        self.stepDeadline = stepDeadline
    }

    /// Stopping gracefully, or cancelled (a service group that gave up waiting): either way the
    /// loops end, or they would spin on errors and sleeps that return at once.
    var isStopping: Bool { Task.isCancelled || stopped.withLock { $0 } }

    func stop() async {
        stopped.withLock { $0 = true }
        await work.ring()
        await maintenance.ring()
        await channels.ring()
    }

    /// One database step of a stage, abandoned after the configured deadline (see `databaseStep`).
    func step<Value: Sendable>(_ name: String, _ operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await databaseStep(name, deadline: stepDeadline, operation)
    }
}
