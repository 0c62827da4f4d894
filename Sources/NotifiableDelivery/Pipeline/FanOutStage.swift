import Logging
import NotifiableStore

/// Turns accepted notifications into deliveries, one keyset-paginated batch per transaction, and
/// rings the bell after each batch so lanes start sending while the rest is still written.
struct FanOutStage: Sendable {
    let fanOut: FanOutStore
    let configuration: DeliveryWorkerConfiguration
    let logger: Logger

    func run(_ run: WorkerRun) async {
        while !run.isStopping {
            var held: FanOutJob?
            do {
                guard
                    var job = try await run.step(
                        "claiming a fan-out",
                        { [fanOut, configuration] in
                            try await fanOut.claim(lease: configuration.lease)
                        })
                else {
                    await run.work.wait(atMost: configuration.pollInterval)
                    continue
                }
                held = job
                var created = 0
                while !run.isStopping, let batch = try await advance(&job, run) {
                    created += batch
                    if batch > 0 { await run.work.ring() }
                }
                if run.isStopping { try await release(job, run) }
                logger.debug("fan-out pass done", metadata: ["notification_id": "\(job.notificationID)", "created": "\(created)"])
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
