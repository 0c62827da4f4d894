import Logging
import NotifiableStore

/// Turns accepted notifications into deliveries, one keyset-paginated batch per transaction, and
/// rings the bell after each batch so lanes start sending while the rest is still written.
///
/// A notification is fanned out in turns (`fanOutTurn` long): at the end of each, the stage gives
/// it up and claims again, which hands it any notification accepted meanwhile first. A push to
/// one device then waits for one turn of a broadcast, not for all of it.
struct FanOutStage: Sendable {
    let fanOut: FanOutStore
    let configuration: DeliveryWorkerConfiguration
    let logger: Logger

    func run(_ run: WorkerRun) async {
        // The last turn's job: claimed again straight away (nothing else waiting), it goes on
        // with what that turn learned.
        var previous: FanOutJob?
        while !run.isStopping {
            var held: FanOutJob?
            do {
                guard
                    var job = try await run.step(
                        "claiming a fan-out",
                        { [fanOut, configuration, previous] in
                            try await fanOut.claim(lease: configuration.lease, after: previous)
                        })
                else {
                    await run.work.wait(atMost: configuration.pollInterval)
                    continue
                }
                held = job
                previous = nil
                var created = 0
                let turnEnds = ContinuousClock.now + configuration.fanOutTurn
                var turnOver = false
                while !run.isStopping, let batch = try await advance(&job, run) {
                    created += batch
                    if batch > 0 { await run.work.ring() }
                    if ContinuousClock.now >= turnEnds {
                        turnOver = true
                        break
                    }
                }
                if run.isStopping {
                    try await release(job, run)
                } else if turnOver {
                    try await run.step("ending a fan-out turn") { [fanOut, job] in try await fanOut.endTurn(job) }
                    previous = job
                }
                logger.debug("fan-out turn done", metadata: ["notification_id": "\(job.notificationID)", "created": "\(created)"])
            } catch {
                logger.error("fan-out failed; retrying shortly", metadata: ["error": "\(databaseErrorText(error))"])
                if let held { try? await release(held, run) }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// One fan-out batch; the job's cursor moves only when the batch answered in time.
    private func advance(_ job: inout FanOutJob, _ run: WorkerRun) async throws -> Int? {
        let current = job
        let (moved, batch) = try await run.step("fanning out a batch") { [fanOut, configuration] in
            var moving = current
            let batch = try await fanOut.advance(&moving, batchSize: configuration.fanOutBatchSize, lease: configuration.lease)
            return (moving, batch)
        }
        job = moved
        return batch
    }

    private func release(_ job: FanOutJob, _ run: WorkerRun) async throws {
        try await run.step("releasing a fan-out") { [fanOut] in try await fanOut.release(job) }
    }
}
