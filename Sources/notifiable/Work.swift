import ArgumentParser
import Foundation
import Logging
import NotifiableApp
import NotifiableStore
import PostgresNIO
import ServiceLifecycle

struct Work: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run delivery workers only (no HTTP API): fan out notifications and send deliveries.",
        discussion: "Run as many as you like, on any machines, over one database. SIGTERM finishes the batches in flight, then exits."
    )

    @Flag(help: "Do not apply pending migrations on start.") var noMigrate = false

    func run() async throws {
        let configuration = try ServerConfiguration.fromEnvironment(ProcessInfo.processInfo.environment)
        let logger = bootstrapLogging(level: configuration.logLevel, format: configuration.logFormat)
        bootstrapMetrics(configuration.metrics)
        let postgresSettings = try postgresConfiguration(configuration)
        if !noMigrate && configuration.migrateOnStart {
            try await withPostgresClient(postgresSettings, logger: logger) { client in
                try await migrate(configuration, postgres: client, logger: logger)
            }
        }
        let postgres = PostgresClient(configuration: postgresSettings, backgroundLogger: logger)
        let worker = makeDeliveryWorker(configuration, postgres: postgres, logger: logger)
        var services: [any Service] = [postgres, worker, makeWebhookWorker(configuration, postgres: postgres, logger: logger)]
        if let port = configuration.workerMetricsPort {
            services.append(buildMetricsApplication(configuration, port: port, postgres: postgres, logger: logger))
        }
        let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
    }
}
