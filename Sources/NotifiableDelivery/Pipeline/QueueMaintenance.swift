import Logging
import NotifiableStore

/// Keeps the queue moving on its own pace: raises the queue's floor past days with nothing left
/// to send, returns deliveries whose worker died (their lease ran out), settles deliveries of
/// expired notifications, folds notifications' counter changes into
/// their totals and the apps' trends, and the apps' device count changes into theirs, expires users' copies of stateful notifications and prunes their change feeds.
struct QueueMaintenance: Sendable {
    let queue: DeliveryQueueStore
    let userNotifications: UserNotificationStore
    let counters: NotificationCounterStore
    let trends: TrendStore
    let deviceCounts: DeviceCountStore
    let configuration: DeliveryWorkerConfiguration
    let metrics: DeliveryMetrics
    let logger: Logger

    func run(_ run: WorkerRun) async {
        while !run.isStopping {
            do {
                try await pass(run)
            } catch {
                logger.error("queue maintenance failed", metadata: ["error": "\(databaseErrorText(error))"])
            }
            await run.maintenance.wait(atMost: configuration.maintenanceInterval)
        }
    }

    private func pass(_ run: WorkerRun) async throws {
        _ = try await run.step("raising the queue's floor") { [queue] in try await queue.raiseFloor() }
        let rescued = try await run.step("rescuing expired leases") { [queue, configuration] in
            try await queue.rescueExpiredLeases(policy: configuration.retryPolicy)
        }
        let expired = try await run.step("expiring overdue deliveries") { [queue] in try await queue.expireOverdue() }
        metrics.maintained(rescued: rescued, expired: expired)
        if rescued > 0 || expired > 0 {
            logger.info("queue maintenance", metadata: ["rescued": "\(rescued)", "expired": "\(expired)"])
            await run.work.ring()
        }
        // A read adds the changes not folded yet, so folding only keeps reads short: what one
        // pass folds is what the interval appended, a few hundred rows at full speed.
        // A failed fold (a deadlock with an app's deletion) loses nothing: the changes stay for the
        // next pass, and the other folds and the rest of this pass go on.
        let foldLimit = 10_000
        let folds: [(String, @Sendable () async throws -> Int)] = [
            ("counter changes", { [counters] in try await counters.fold(limit: foldLimit) }),
            ("failure changes", { [trends] in try await trends.foldFailures(limit: foldLimit) }),
            ("device count changes", { [deviceCounts] in try await deviceCounts.fold(limit: foldLimit) }),
        ]
        for (what, fold) in folds {
            do {
                while try await run.step("folding \(what)", fold) == foldLimit {}
            } catch {
                logger.warning("folding \(what) failed; the next pass retries", metadata: ["error": "\(databaseErrorText(error))"])
            }
        }
        let expiredCopies = try await run.step("expiring users' copies") { [userNotifications] in
            try await userNotifications.expire()
        }
        let prunedChanges = try await run.step("pruning change feeds") { [userNotifications] in
            try await userNotifications.pruneChanges()
        }
        if expiredCopies > 0 || prunedChanges > 0 {
            logger.info(
                "user notification maintenance",
                metadata: [
                    "expired": "\(expiredCopies)", "pruned_changes": "\(prunedChanges)",
                ])
        }
    }
}
