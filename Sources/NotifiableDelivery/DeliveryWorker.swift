import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// One worker process's share of the pipeline: fans notifications out into deliveries, claims
/// ready deliveries, sends them through the provider's sender, and records what happened.
/// Any number of workers on any number of machines share one database.
///
/// On graceful shutdown it stops claiming, lets batches in flight finish and be recorded,
/// then returns; anything it could not finish comes back to the queue when its lease runs out.
public final class DeliveryWorker: Service {
    private let postgres: PostgresClient
    private let queue: DeliveryQueue
    private let fanOut: NotificationFanOut
    private let senders: [Provider: any PushSender]
    private let sandbox: (any SandboxDelivery)?
    /// Marks an app's settings for a provider (the version saved at `settingsVersion`) as refused
    /// by the gateway; true when newly marked.
    private let markMisconfigured: @Sendable (_ provider: Provider, _ appID: Int64, _ reason: String, _ settingsVersion: Date) async throws -> Bool
    private let configuration: DeliveryWorkerConfiguration
    private let metrics: DeliveryMetrics
    private let logger: Logger
    private let doorbell = Doorbell()
    private let lostDeliveries = LostDeliveryWarnings()
    /// Expires users' copies of stateful notifications and prunes their change feeds.
    private let userNotifications: UserNotifications
    /// Rung only to stop: maintenance keeps its own pace, not the pace of work arriving.
    private let maintenanceBell = Doorbell()
    private let stopping = Mutex(false)
    /// Awaited before any work: the schema must be migrated first.
    private let beforeStart: @Sendable () async throws -> Void

    public init(
        postgres: PostgresClient, senders: [Provider: any PushSender], sandbox: (any SandboxDelivery)? = nil,
        markMisconfigured: @escaping @Sendable (_ provider: Provider, _ appID: Int64, _ reason: String, _ settingsVersion: Date) async throws -> Bool,
        configuration: DeliveryWorkerConfiguration, metrics: DeliveryMetrics = .disabled, logger: Logger,
        beforeStart: @escaping @Sendable () async throws -> Void = {}
    ) {
        self.beforeStart = beforeStart
        self.metrics = metrics
        self.postgres = postgres
        self.queue = DeliveryQueue(client: postgres, logger: logger)
        self.fanOut = NotificationFanOut(client: postgres, logger: logger)
        self.userNotifications = UserNotifications(client: postgres, logger: logger)
        self.senders = senders
        self.sandbox = sandbox
        self.markMisconfigured = markMisconfigured
        self.configuration = configuration
        self.logger = logger
    }

    /// Stopping gracefully, or cancelled (a service group that gave up waiting): either way the loops end, or
    /// they would spin on errors and sleeps that return at once.
    private var isStopping: Bool { Task.isCancelled || stopping.withLock { $0 } }

    public func run() async throws {
        try await beforeStart()
        await withGracefulShutdownHandler {
            // The listener only wakes the loops; it ends when they have.
            let listener = Task { await self.listenForWork() }
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.maintain() }
                group.addTask { await self.fanOutLoop() }
                for _ in 0..<max(0, configuration.lanes) {
                    group.addTask { await self.deliveryLane() }
                }
            }
            listener.cancel()
            await listener.value
        } onGracefulShutdown: {
            self.stopping.withLock { $0 = true }
            Task {
                await self.doorbell.ring()
                await self.maintenanceBell.ring()
            }
        }
        for sender in senders.values { await sender.shutdown() }
        await sandbox?.shutdown()
        logger.info("delivery worker stopped")
    }

    // MARK: Loops

    /// Claims a batch, sends it, and records its outcomes while the next batch is claimed and sent:
    /// recording is a database round trip that would otherwise leave the gateway idle. At most one
    /// batch per lane waits to be recorded, so a lane has at most two batches out (the window a
    /// worker killed outright can send twice).
    private func deliveryLane() async {
        await withTaskGroup(of: Void.self) { recordings in
            while !isStopping {
                do {
                    let claimed = try await step("claiming deliveries") { [queue, configuration] in
                        try await queue.claim(limit: configuration.batchSize, lease: configuration.lease)
                    }
                    guard !claimed.isEmpty else {
                        await doorbell.wait(atMost: configuration.pollInterval)
                        continue
                    }
                    // While the batch is out, its lease is renewed: only a worker that died (or lost
                    // the database) lets it run out.
                    let heartbeat = Task { await self.keepLeases(of: claimed) }
                    let results = await withTaskGroup(of: DeliveryResult.self, returning: [DeliveryResult].self) { group in
                        for delivery in claimed {
                            group.addTask { await self.deliver(delivery) }
                        }
                        var results: [DeliveryResult] = []
                        results.reserveCapacity(claimed.count)
                        for await result in group { results.append(result) }
                        return results
                    }
                    lostDeliveries.check(results, of: claimed, logger: logger)
                    await recordings.next()
                    recordings.addTask {
                        await self.recordUntilStored(results)
                        heartbeat.cancel()
                    }
                } catch {
                    logger.error("delivery lane failed; retrying shortly", metadata: ["error": "\(databaseErrorText(error))"])
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
    }

    /// Renews the lease of a batch in flight every third of a lease, until cancelled.
    private func keepLeases(of claimed: [ClaimedDelivery]) async {
        let interval = configuration.lease / 3
        while true {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
            do {
                _ = try await step("renewing leases") { [queue, configuration] in
                    try await queue.extendLeases(claimed, lease: configuration.lease)
                }
            } catch {
                logger.warning("could not renew a batch's lease", metadata: ["error": "\(databaseErrorText(error))"])
            }
        }
    }

    /// Pushes that went out must be recorded, or they would be sent again when their lease
    /// runs out: keep trying (also while stopping; the batch's lease is still being renewed)
    /// until the database takes them, for at most one lease's length.
    private func recordUntilStored(_ results: [DeliveryResult]) async {
        let giveUp = ContinuousClock.now + configuration.lease
        var delay = Duration.milliseconds(100)
        while true {
            do {
                try await step("recording a batch") { [queue] in try await queue.record(results) }
                return
            } catch {
                guard !Task.isCancelled, ContinuousClock.now + delay < giveUp else {
                    logger.error("could not record a batch; its deliveries will be retried after their lease", metadata: [
                        "count": "\(results.count)", "error": "\(databaseErrorText(error))",
                    ])
                    return
                }
                logger.warning("recording a batch failed; trying again", metadata: ["error": "\(databaseErrorText(error))"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    private func fanOutLoop() async {
        while !isStopping {
            var held: FanOutJob?
            do {
                guard var job = try await step("claiming a fan-out", { [fanOut, configuration] in
                    try await fanOut.claim(lease: configuration.lease)
                }) else {
                    await doorbell.wait(atMost: configuration.pollInterval)
                    continue
                }
                held = job
                var created = 0
                while !isStopping, let batch = try await advance(&job) {
                    created += batch
                    if batch > 0 { await doorbell.ring() }
                }
                if isStopping { try await release(job) }
                logger.debug("fan-out pass done", metadata: ["notification_id": "\(job.notificationID)", "created": "\(created)"])
            } catch {
                logger.error("fan-out failed; retrying shortly", metadata: ["error": "\(databaseErrorText(error))"])
                if let held { try? await release(held) }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    private func maintain() async {
        while !isStopping {
            do {
                let rescued = try await step("rescuing expired leases") { [queue, configuration] in
                    try await queue.rescueExpiredLeases(maxAttempts: configuration.retryPolicy.maxAttempts)
                }
                let expired = try await step("expiring overdue deliveries") { [queue] in try await queue.expireOverdue() }
                metrics.maintained(rescued: rescued, expired: expired)
                if rescued > 0 || expired > 0 {
                    logger.info("queue maintenance", metadata: ["rescued": "\(rescued)", "expired": "\(expired)"])
                    await doorbell.ring()
                }
                let expiredCopies = try await step("expiring users' copies") { [userNotifications] in
                    try await userNotifications.expire()
                }
                let prunedChanges = try await step("pruning change feeds") { [userNotifications] in
                    try await userNotifications.pruneChanges()
                }
                if expiredCopies > 0 || prunedChanges > 0 {
                    logger.info("user notification maintenance", metadata: [
                        "expired": "\(expiredCopies)", "pruned_changes": "\(prunedChanges)",
                    ])
                }
            } catch {
                logger.error("queue maintenance failed", metadata: ["error": "\(databaseErrorText(error))"])
            }
            await maintenanceBell.wait(atMost: configuration.maintenanceInterval)
        }
    }

    /// LISTEN on the channel the API and fan-out NOTIFY, so idle lanes start at once.
    private func listenForWork() async {
        while !Task.isCancelled {
            do {
                // `listen(on:)` sends UNLISTEN when it returns, so the connection goes back to the
                // pool without a listener still registered on it.
                try await postgres.withConnection { connection in
                    try await connection.listen(on: "notifiable_work") { notifications in
                        for try await _ in notifications {
                            await self.doorbell.ring()
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("LISTEN for work failed; polling meanwhile", metadata: ["error": "\(databaseErrorText(error))"])
                try? await Task.sleep(for: .seconds(2))
            }
        }
    }

    // MARK: Database steps

    private func step<Value: Sendable>(_ name: String, _ operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await databaseStep(name, deadline: configuration.databaseStepDeadline, operation)
    }

    /// One fan-out batch; the job's cursor moves only when the batch answered in time.
    private func advance(_ job: inout FanOutJob) async throws -> Int? {
        let current = job
        let (moved, batch) = try await step("fanning out a batch") { [fanOut, configuration] in
            var moving = current
            let batch = try await fanOut.advance(&moving, batchSize: configuration.fanOutBatchSize, lease: configuration.lease)
            return (moving, batch)
        }
        job = moved
        return batch
    }

    private func release(_ job: FanOutJob) async throws {
        try await step("releasing a fan-out") { [fanOut] in try await fanOut.release(job) }
    }

    // MARK: One delivery

    /// Sends one delivery and counts its outcome.
    private func deliver(_ delivery: ClaimedDelivery) async -> DeliveryResult {
        let (result, tokenDead) = await send(delivery)
        let outcome: DeliveryMetrics.Outcome = switch result.state {
        case .sent: .sent
        case .retrying: .retrying
        case .failed: tokenDead ? .tokenInvalidated : .failed
        case .dead: .dead
        }
        metrics.attempted(appID: delivery.appID, provider: delivery.provider, attempt: delivery.attempt, outcome: outcome)
        return result
    }

    /// The result of sending one delivery, and whether the gateway called its token dead.
    private func send(_ delivery: ClaimedDelivery) async -> (DeliveryResult, tokenDead: Bool) {
        let now = Date()
        if let expiresAt = delivery.expiresAt, expiresAt <= now {
            return (DeliveryResult(deliveryID: delivery.id, attempt: delivery.attempt, state: .dead, reason: "notification expired"), false)
        }
        guard let sender = delivery.sandbox ? sandbox?.sender(for: delivery.provider) : senders[delivery.provider] else {
            return (DeliveryResult(
                deliveryID: delivery.id, attempt: delivery.attempt, state: .dead,
                reason: "\(delivery.provider.rawValue)_not_supported: this worker cannot send to \(delivery.provider.rawValue)\(delivery.sandbox ? " in sandbox mode" : "")"
            ), false)
        }
        let start = ContinuousClock.now
        let outcome = await sender.send(delivery)
        metrics.gatewayRequest(provider: delivery.provider, sandbox: delivery.sandbox, took: ContinuousClock.now - start)
        if delivery.sandbox, case .sent(let gatewayID) = outcome {
            var push: SandboxPush?
            if let gatewayID { push = await sandbox?.takePush(provider: delivery.provider, gatewayID: gatewayID) }
            return (DeliveryResult(
                deliveryID: delivery.id, attempt: delivery.attempt, state: .sent, gatewayID: gatewayID, sandbox: true, sandboxPush: push
            ), false)
        }
        let decision = DeliveryDecision.after(
            outcome, attempt: delivery.attempt, policy: configuration.retryPolicy, now: Date(), expiresAt: delivery.expiresAt,
            sandbox: delivery.sandbox
        )
        return await carryOut(decision, for: delivery, sentAt: now)
    }

    /// Records what `DeliveryDecision` decided, with its side effects: a dead token invalidates
    /// the device (and counts as token_invalidated only when it did, so that outcome and
    /// notifiable_token_invalidations_total agree: a device registered again since the verdict
    /// keeps its token); refused settings are marked so nothing more is sent for the app.
    /// - Parameter sentAt: when this attempt began: a "token dead" verdict without a date of its
    ///   own is no older than that.
    private func carryOut(_ decision: DeliveryDecision, for delivery: ClaimedDelivery, sentAt: Date) async -> (DeliveryResult, tokenDead: Bool) {
        let id = delivery.id, attempt = delivery.attempt
        switch decision {
        case .sent(let gatewayID):
            return (DeliveryResult(deliveryID: id, attempt: attempt, state: .sent, gatewayID: gatewayID), false)
        case .retry(let at, let reason):
            return (DeliveryResult(deliveryID: id, attempt: attempt, state: .retrying, runAt: at, reason: reason), false)
        case .failed(let reason):
            return (DeliveryResult(deliveryID: id, attempt: attempt, state: .failed, reason: reason), false)
        case .failedTokenDead(let reason, let at):
            let invalidated = await invalidate(delivery, reason: reason, at: at ?? sentAt)
            return (DeliveryResult(deliveryID: id, attempt: attempt, state: .failed, reason: reason), invalidated)
        case .dead(let reason):
            return (DeliveryResult(deliveryID: id, attempt: attempt, state: .dead, reason: reason), false)
        case .deadMisconfigured(let reason, let version):
            var newlyMarked = false
            do {
                newlyMarked = try await markMisconfigured(delivery.provider, delivery.appID, reason, version)
            } catch {
                logger.error("could not mark app misconfigured", metadata: ["app_id": "\(delivery.appID)", "error": "\(databaseErrorText(error))"])
            }
            if newlyMarked {
                // Once per app, not once per delivery: a big notification would flood the log.
                logger.warning("app's gateway configuration refused; its deliveries go to dead until it is fixed", metadata: [
                    "app_id": "\(delivery.appID)", "reason": "\(reason)",
                ])
            }
            return (DeliveryResult(deliveryID: id, attempt: attempt, state: .dead, reason: reason), false)
        }
    }

    /// Marks the device invalid after a gateway's "token dead" verdict dated `at`; true when it
    /// was (false when it registered again since, or the database did not take it).
    private func invalidate(_ delivery: ClaimedDelivery, reason: String, at: Date) async -> Bool {
        do {
            let invalidated = try await step("invalidating a device") { [queue] in
                try await queue.invalidateDevice(id: delivery.deviceID, token: delivery.token, reason: reason, at: at)
            }
            if invalidated {
                metrics.tokenInvalidated(provider: delivery.provider)
                logger.info("device token invalidated", metadata: [
                    "app_id": "\(delivery.appID)", "device_id": "\(delivery.deviceID)",
                    "token": "\(PushToken.logPrefix(delivery.token))", "reason": "\(reason)",
                ])
            }
            return invalidated
        } catch {
            logger.error("could not invalidate device", metadata: ["device_id": "\(delivery.deviceID)", "error": "\(databaseErrorText(error))"])
            return false
        }
    }
}
