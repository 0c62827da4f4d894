import Logging
import NotifiableStore

/// Keeps the queue moving on its own pace: returns deliveries whose worker died (their lease ran
/// out), settles deliveries of expired notifications, expires users' copies of stateful
/// notifications and prunes their change feeds.
struct QueueMaintenance: Sendable {
    let queue: DeliveryQueueStore
    let userNotifications: UserNotificationStore
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
        let rescued = try await run.step("rescuing expired leases") { [queue, configuration] in
            try await queue.rescueExpiredLeases(maxAttempts: configuration.retryPolicy.maxAttempts)
        }
        let expired = try await run.step("expiring overdue deliveries") { [queue] in try await queue.expireOverdue() }
        metrics.maintained(rescued: rescued, expired: expired)
        if rescued > 0 || expired > 0 {
            logger.info("queue maintenance", metadata: ["rescued": "\(rescued)", "expired": "\(expired)"])
            await run.work.ring()
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
