import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import PostgresNIO
import ServiceLifecycle

/// Keeps the database's size bounded and its partitions ready, in every process: at start and
/// every `interval` it makes the coming days' delivery partitions (so that no insert finds its
/// day missing, even when only API processes run), and where `retentionDays` is set (worker
/// processes) it removes what is past retention. Several processes may do it at once: partitions
/// are made under an advisory lock, and retention's batches skip rows another pass holds.
public final class DataUpkeep: Service {
    private let client: Database
    private let retention: RetentionStore
    private let retentionDays: Int?
    private let interval: Duration
    private let logger: Logger
    private let beforeStart: @Sendable () async throws -> Void

    /// `sessions` holds retention's pass of dropping days (`RetentionStore.sessions`); nil is `postgres`.
    public init(
        postgres: Database, sessions: Database? = nil, retentionDays: Int?, interval: Duration, logger: Logger,
        beforeStart: @escaping @Sendable () async throws -> Void = {}
    ) {
        client = postgres
        retention = RetentionStore(client: postgres, sessions: sessions, logger: logger)
        self.retentionDays = retentionDays
        self.interval = interval
        self.logger = logger
        self.beforeStart = beforeStart
    }

    public func run() async throws {
        try await beforeStart()
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            await pass()
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
    }

    /// One round; a failure is logged and the next round tries again.
    private func pass() async {
        do {
            try await DeliveryPartitions.createAhead(on: client, logger: logger)
        } catch {
            logger.error("could not create the coming days' delivery partitions", metadata: ["error": "\(databaseErrorText(error))"])
        }
        guard let retentionDays else { return }
        do {
            let report = try await retention.run(keepingDays: retentionDays)
            logger.info(
                "retention",
                metadata: [
                    "days": "\(retentionDays)", "dropped_partitions": "\(report.droppedPartitions.count)",
                    "deliveries": "\(report.deletedDeliveries)",
                    "notifications": "\(report.deletedNotifications)", "sandbox_pushes": "\(report.deletedSandboxPushes)",
                    "devices": "\(report.purgedDevices)", "device_events": "\(report.deletedDeviceEvents)",
                    "webhook_events": "\(report.deletedWebhookEvents)", "activity_tokens": "\(report.deletedActivityTokens)",
                    "longest_lock_ms": "\(Int64(report.longestLock.seconds * 1000))",
                ])
        } catch {
            logger.error("retention failed; the next round tries again", metadata: ["error": "\(databaseErrorText(error))"])
        }
    }
}
