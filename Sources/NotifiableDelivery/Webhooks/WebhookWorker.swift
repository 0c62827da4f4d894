import AsyncHTTPClient
import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Sends apps' webhook events: forms batches of pending events, claims ready batches, POSTs
/// each signed, and records the answer: 2xx delivers the batch; anything else retries it with
/// backoff (no sooner than Retry-After) and, after too many failures in a row, pauses the
/// webhook until an operator resumes it. Runs beside the delivery worker in every worker
/// process; any number share one database.
public final class WebhookWorker: Service {
    private let queue: WebhookQueueStore
    private let configuration: WebhookWorkerConfiguration
    private let metrics: WebhookMetrics
    private let logger: Logger
    private let doorbell = Doorbell()
    private let stopping = Mutex(false)
    private let beforeStart: @Sendable () async throws -> Void

    public init(
        postgres: Database, keys: MasterKeyring, configuration: WebhookWorkerConfiguration, metrics: WebhookMetrics = .disabled,
        logger: Logger, beforeStart: @escaping @Sendable () async throws -> Void = {}
    ) {
        self.queue = WebhookQueueStore(client: postgres, keys: keys, logger: logger)
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        self.beforeStart = beforeStart
    }

    /// Stopping gracefully, or cancelled: either way the loop ends, or it would spin on sleeps that return at once.
    private var isStopping: Bool { Task.isCancelled || stopping.withLock { $0 } }

    public func run() async throws {
        try await beforeStart()
        let client = WebhookSender.makeHTTPClient()
        let sender = WebhookSender(client: client, requestTimeout: configuration.requestTimeout, targets: configuration.targets)
        await withGracefulShutdownHandler {
            await loop(sender)
        } onGracefulShutdown: {
            self.stopping.withLock { $0 = true }
            Task { await self.doorbell.ring() }
        }
        try? await client.shutdown()
        logger.info("webhook worker stopped")
    }

    /// What a slot of the loop's task group reports when it ends.
    private enum Finished: Sendable {
        case batch
        case tick
    }

    /// Keeps up to `concurrency` batches in flight and claims another as soon as one ends, so a
    /// slow receiver holds one slot for at most its deadline and never the others' batches; a
    /// tick every poll interval keeps forming, claiming and lease rescue going while every slot
    /// is busy.
    private func loop(_ sender: WebhookSender) async {
        await withTaskGroup(of: Finished.self) { group in
            var inFlight = 0
            var ticking = false
            // Forming batches is a three-part statement: run it when woken (a tick, the bell, a
            // poll) or when the last claim found too few ready batches, not after every batch ends.
            var forms = true
            var lastRescue = ContinuousClock.now
            while !isStopping {
                do {
                    if ContinuousClock.now - lastRescue > configuration.lease / 4 {
                        _ = try await step("rescuing webhook leases") { [queue] in try await queue.rescueExpiredLeases() }
                        _ = try await step("pruning delivered webhook events") { [queue, configuration] in
                            try await queue.pruneDelivered(retention: configuration.retention)
                        }
                        lastRescue = .now
                    }
                    if forms {
                        _ = try await step("forming webhook batches") { [queue, configuration] in
                            try await queue.formBatches(batchSize: configuration.batchSize)
                        }
                    }
                    let free = configuration.concurrency - inFlight
                    let claimed =
                        free > 0
                        ? try await step("claiming webhook batches") { [queue, configuration] in
                            try await queue.claim(limit: free, lease: configuration.lease)
                        }
                        : []
                    for batch in claimed {
                        group.addTask {
                            await self.deliver(batch, with: sender)
                            return .batch
                        }
                    }
                    inFlight += claimed.count
                    forms = claimed.count < free
                    if inFlight == 0 {
                        await doorbell.wait(atMost: configuration.pollInterval)
                        forms = true
                        continue
                    }
                    if !ticking {
                        ticking = true
                        group.addTask { [doorbell, configuration] in
                            await doorbell.wait(atMost: configuration.pollInterval)
                            return .tick
                        }
                    }
                    switch await group.next() {
                    case .batch?: inFlight -= 1
                    case .tick?:
                        ticking = false
                        forms = true
                    case nil: break
                    }
                } catch {
                    logger.error("webhook loop failed; retrying shortly", metadata: ["error": "\(databaseErrorText(error))"])
                    try? await Task.sleep(for: .seconds(1))
                }
            }
            // Stopping: the group waits for the batches in flight, each within its deadline, to be
            // recorded; a tick still waiting is woken.
            await doorbell.ring()
        }
    }

    private func step<Value: Sendable>(_ name: String, _ operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await databaseStep(name, deadline: configuration.databaseStepDeadline, operation)
    }

    private func deliver(_ batch: ClaimedWebhookBatch, with sender: WebhookSender) async {
        let outcome = await sender.send(batch)
        metrics.sent(delivered: outcome.isDelivered)
        do {
            switch outcome {
            case .delivered(let status):
                try await step("recording a webhook batch") { [queue] in try await queue.recordDelivered(batch, status: status) }
            case .failed(let status, let error, let retryAfter):
                let failures = batch.consecutiveFailures + 1
                let runAt =
                    configuration.retryPolicy.nextAttempt(after: failures, retryAfter: retryAfter, now: Date(), expiresAt: nil)
                    ?? Date().addingTimeInterval(configuration.retryPolicy.maxDelay.seconds)
                let paused = try await step("recording a webhook batch") { [queue, configuration] in
                    try await queue.recordFailed(batch, status: status, error: error, runAt: runAt, pauseAfter: configuration.pauseAfter)
                }
                if paused { metrics.pausedWebhook() }
                logger.log(
                    level: paused ? .warning : .info, paused ? "webhook paused after repeated failures" : "webhook batch failed; will retry",
                    metadata: [
                        "webhook_id": "\(batch.webhookID)", "batch_id": "\(batch.id)", "error": "\(error)",
                    ])
            }
        } catch {
            // Left running: the lease runs out and the batch is sent again (receivers de-duplicate by event id).
            logger.error(
                "could not record a webhook batch's outcome",
                metadata: [
                    "batch_id": "\(batch.id)", "error": "\(databaseErrorText(error))",
                ])
        }
    }
}
