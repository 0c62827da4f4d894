import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import PostgresNIO
import ServiceLifecycle

/// One worker process's share of the pipeline, as stages that each do one job: fan-out writes
/// deliveries, sending lanes claim and send them, the recorder writes what happened, maintenance
/// rescues and expires, and the wake listener rings when there is work. Any number of workers on
/// any number of machines share one database.
///
/// On graceful shutdown it stops claiming, lets batches in flight finish and be recorded,
/// then returns; anything it could not finish comes back to the queue when its lease runs out.
public final class DeliveryWorker: Service {
    private let senders: [Provider: any PushSender]
    private let sandbox: (any SandboxDelivery)?
    private let configuration: DeliveryWorkerConfiguration
    private let logger: Logger
    private let fanOut: FanOutStage
    private let lane: SendingLane
    private let maintenance: QueueMaintenance
    /// Broadcast channels, when the APNs sender can reach Apple's channel API.
    private let channels: ActivityChannelStage?
    private let listener: WakeListener
    /// Awaited before any work: the schema must be migrated first.
    private let beforeStart: @Sendable () async throws -> Void

    /// `sessions` carries the LISTEN for work (`WakeListener`); nil is `postgres`.
    public init(
        postgres: Database, sessions: Database? = nil, senders: [Provider: any PushSender], sandbox: (any SandboxDelivery)? = nil,
        configuration: DeliveryWorkerConfiguration, metrics: DeliveryMetrics = .disabled, logger: Logger,
        beforeStart: @escaping @Sendable () async throws -> Void = {}
    ) {
        let queue = DeliveryQueueStore(client: postgres, logger: logger)
        self.senders = senders
        self.sandbox = sandbox
        self.configuration = configuration
        self.logger = logger
        self.beforeStart = beforeStart
        fanOut = FanOutStage(fanOut: FanOutStore(client: postgres, logger: logger), configuration: configuration, logger: logger)
        lane = SendingLane(
            queue: queue,
            attempt: PushAttempt(senders: senders, sandbox: sandbox, retryPolicy: configuration.retryPolicy, metrics: metrics),
            recorder: Recorder(
                queue: queue, configuration: configuration, metrics: metrics, lostDeliveries: LostDeliveryWarnings(), logger: logger
            ),
            configuration: configuration, logger: logger
        )
        maintenance = QueueMaintenance(
            queue: queue, userNotifications: UserNotificationStore(client: postgres, logger: logger),
            counters: NotificationCounterStore(client: postgres, logger: logger), trends: TrendStore(client: postgres, logger: logger),
            deviceCounts: DeviceCountStore(client: postgres, logger: logger), configuration: configuration, metrics: metrics, logger: logger
        )
        listener = WakeListener(postgres: sessions ?? postgres, logger: logger)
        let liveChannels = senders[.apns] as? any ActivityChannelGateway
        let sandboxChannels = sandbox?.sender(for: .apns) as? any ActivityChannelGateway
        channels =
            liveChannels == nil && sandboxChannels == nil
            ? nil
            : ActivityChannelStage(
                store: ActivityChannelStore(client: postgres, logger: logger), live: liveChannels, sandbox: sandboxChannels,
                configuration: configuration, logger: logger)
    }

    public func run() async throws {
        try await beforeStart()
        let run = WorkerRun(stepDeadline: configuration.databaseStepDeadline)
        await withGracefulShutdownHandler {
            // The listener only wakes the stages; it ends when they have.
            let listening = Task { [listener] in await listener.run(run) }
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [maintenance] in await maintenance.run(run) }
                group.addTask { [fanOut] in await fanOut.run(run) }
                if let channels { group.addTask { await channels.run(run) } }
                for _ in 0..<max(0, configuration.lanes) {
                    group.addTask { [lane] in await lane.run(run) }
                }
            }
            listening.cancel()
            await listening.value
        } onGracefulShutdown: {
            Task { await run.stop() }
        }
        for sender in senders.values { await sender.shutdown() }
        await sandbox?.shutdown()
        logger.info("delivery worker stopped")
    }
}
