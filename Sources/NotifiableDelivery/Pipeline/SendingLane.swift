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
                    let askedAt = ContinuousClock.now
                    let claimed = try await run.step("claiming deliveries") { [queue, configuration] in
                        try await queue.claim(limit: configuration.batchSize, lease: configuration.lease)
                    }
                    guard !claimed.isEmpty else {
                        await run.work.wait(atMost: configuration.pollInterval)
                        continue
                    }
                    // While the batch is out, its lease is renewed: only a worker that died (or lost
                    // the database) lets it run out.
                    let lease = BatchLease(askedAt: askedAt, lease: configuration.lease)
                    let heartbeat = Task { await keepLeases(of: claimed, lease, run) }
                    let attempts = await send(claimed, lease)
                    await recordings.next()
                    lease.startRecording()
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

    /// Every delivery of the batch at once: the senders multiplex them over their connections. One
    /// whose send may not end before the lease is known to (a starved process, renewals late) or
    /// whose lease a renewal found lost is not sent: it is given back, or left to its new owner.
    private func send(_ claimed: [ClaimedDelivery], _ lease: BatchLease) async -> [Attempt] {
        await withTaskGroup(of: Attempt.self, returning: [Attempt].self) { group in
            for delivery in claimed {
                group.addTask { [configuration] in
                    guard lease.maySend(delivery.id, sendBudget: configuration.sendBudget) else {
                        return (delivery, .givenBack(delivery, reason: "given back unsent: its lease was not known to outlast a send"))
                    }
                    return (delivery, await attempt(delivery))
                }
            }
            var attempts: [Attempt] = []
            attempts.reserveCapacity(claimed.count)
            for await attempt in group { attempts.append(attempt) }
            let givenBack = attempts.count { $0.result.unsent }
            if givenBack > 0 {
                logger.warning(
                    "deliveries given back unsent: the batch's lease could not be renewed in time",
                    metadata: ["count": "\(givenBack)", "lease": "\(configuration.lease)"])
            }
            return attempts
        }
    }

    /// Renews the lease of a batch in flight every third of a lease, until cancelled. A renewal
    /// that finds deliveries no longer held marks them lost (their sends not yet begun are not
    /// made); one asked with less than a third of the lease left says the process is starved.
    private func keepLeases(of claimed: [ClaimedDelivery], _ lease: BatchLease, _ run: WorkerRun) async {
        let interval = configuration.lease / 3
        let ids = claimed.map(\.id)
        while true {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
            let askedAt = ContinuousClock.now
            do {
                let held = try await run.step("renewing leases") { [queue, configuration] in
                    try await queue.extendLeases(claimed, lease: configuration.lease)
                }
                if Task.isCancelled { return }
                let (lost, margin) = lease.renewed(askedAt: askedAt, held: held, of: ids)
                if margin < interval {
                    recorder.metrics.renewedLate()
                    logger.warning(
                        "a batch's lease was renewed late; the process may be starved of CPU",
                        metadata: ["left_of_lease": "\(margin)", "lease": "\(configuration.lease)"])
                }
                if !lost.isEmpty {
                    logger.warning(
                        "a renewal found deliveries whose lease ran out; they are left to whoever holds them now",
                        metadata: ["count": "\(lost.count)"])
                }
            } catch {
                // Cancelled: the batch is recorded, nothing to renew.
                if Task.isCancelled { return }
                logger.warning("could not renew a batch's lease", metadata: ["error": "\(databaseErrorText(error))"])
            }
        }
    }
}
