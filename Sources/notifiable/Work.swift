import ArgumentParser
import Foundation
import Logging
import NotifiableApp
import NotifiableCore
import NotifiableDelivery
import NotifiableStore
import PostgresNIO
import ServiceLifecycle

struct Work: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run delivery workers only (no HTTP API): fan out notifications and send deliveries.",
        discussion: "Run as many as you like, on any machines, over one database. SIGTERM finishes the batches in flight, then exits."
    )

    @Flag(help: "Do not apply pending migrations on start.") var noMigrate = false
    /// Marks every claimed delivery sent without sending it: the queue benchmark's worker.
    @Flag(help: .hidden) var instantSenderForBenchmarks = false

    func run() async throws {
        let configuration = try ServerConfiguration.fromEnvironment(ProcessInfo.processInfo.environment)
        let logger = bootstrapLogging(level: configuration.logLevel, format: configuration.logFormat)
        DescriptorLimit.raiseToHardLimit(logger: logger)
        bootstrapMetrics(configuration.metrics)
        if !noMigrate && configuration.migrateOnStart {
            try await withDatabase(url: configuration.databaseURL, logger: logger) { client in
                try await migrate(configuration, postgres: client, logger: logger)
            }
        }
        let postgres = try makeDatabase(configuration, logger: logger)
        var senders: [Provider: any PushSender]? = nil
        if instantSenderForBenchmarks {
            logger.critical("BENCHMARK MODE: every delivery this worker claims is marked sent and NOTHING IS SENT. Never run this against real data.")
            senders = [.apns: InstantPushSender(), .fcm: InstantPushSender()]
        }
        let sessions = try makeSessionDatabase(configuration, logger: logger)
        let worker = makeDeliveryWorker(configuration, postgres: postgres, sessions: sessions, logger: logger, replacingSenders: senders)
        let upkeep = DataUpkeep(
            postgres: postgres, sessions: sessions, retentionDays: configuration.retentionDays, interval: configuration.upkeepInterval,
            logger: logger
        )
        var services: [any Service] = [postgres, worker, makeWebhookWorker(configuration, postgres: postgres, logger: logger), upkeep]
        if let sessions { services.append(sessions) }
        if let port = configuration.workerMetricsPort {
            services.append(buildMetricsApplication(configuration, port: port, postgres: postgres, logger: logger))
        }
        try await runUntilTerminated(services, drainTime: configuration.drainTime, logger: logger)
    }
}
