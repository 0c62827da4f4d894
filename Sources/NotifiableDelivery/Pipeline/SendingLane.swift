import Logging
import NotifiableCore
import NotifiableStore

/// Claims a batch, sends it, and hands its outcomes to the recorder while the next batch is
/// claimed and sent: recording is a database round trip that would otherwise leave the gateway
/// idle. At most one batch per lane waits to be recorded, so a lane has at most two batches out
/// (the window a worker killed outright can send twice).
struct SendingLane: Sendable {
    let queue: DeliveryQueueStore
    let attempt: PushAttempt
    let recorder: Recorder
    let configuration: DeliveryWorkerConfiguration
    let logger: Logger

    func run(_ run: WorkerRun) async {
        await withTaskGroup(of: Void.self) { recordings in
            while !run.isStopping {
                do {
                    let claimed = try await run.step("claiming deliveries") { [queue, configuration] in
                        try await queue.claim(limit: configuration.batchSize, lease: configuration.lease)
                    }
                    guard !claimed.isEmpty else {
                        await run.work.wait(atMost: configuration.pollInterval)
                        continue
                    }
                    // While the batch is out, its lease is renewed: only a worker that died (or lost
                    // the database) lets it run out.
                    let heartbeat = Task { await keepLeases(of: claimed, run) }
                    let attempts = await send(claimed)
                    await recordings.next()
                    recordings.addTask {
                        await recorder.record(attempts, run)
                        heartbeat.cancel()
                    }
                } catch {
                    logger.error("delivery lane failed; retrying shortly", metadata: ["error": "\(databaseErrorText(error))"])
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
    }

    /// Every delivery of the batch at once: the senders multiplex them over their connections.
    private func send(_ claimed: [ClaimedDelivery]) async -> [Attempt] {
        await withTaskGroup(of: Attempt.self, returning: [Attempt].self) { group in
            for delivery in claimed {
                group.addTask { (delivery, await attempt(delivery)) }
            }
            var attempts: [Attempt] = []
            attempts.reserveCapacity(claimed.count)
            for await attempt in group { attempts.append(attempt) }
            return attempts
        }
    }

    /// Renews the lease of a batch in flight every third of a lease, until cancelled.
    private func keepLeases(of claimed: [ClaimedDelivery], _ run: WorkerRun) async {
        let interval = configuration.lease / 3
        while true {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
            do {
                _ = try await run.step("renewing leases") { [queue, configuration] in
                    try await queue.extendLeases(claimed, lease: configuration.lease)
                }
            } catch {
                logger.warning("could not renew a batch's lease", metadata: ["error": "\(databaseErrorText(error))"])
            }
        }
    }
}
