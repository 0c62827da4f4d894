import ArgumentParser
import Foundation
import Hummingbird
import NotifiableApp
import ServiceLifecycle

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the HTTP API (configured from the environment: DATABASE_URL, NOTIFIABLE_MASTER_KEY, PORT, HOST, …)."
    )

    @Option(help: "Address to listen on (overrides HOST).") var host: String?
    @Option(help: "Port to listen on (overrides PORT).") var port: Int?
    @Flag(help: "Do not apply pending migrations on start.") var noMigrate = false
    @Flag(help: "Serve the API only; run workers elsewhere with `notifiable work` (also NOTIFIABLE_WORKERS=false).") var noWorkers = false

    func run() async throws {
        var configuration = try ServerConfiguration.fromEnvironment(ProcessInfo.processInfo.environment)
        if let host { configuration.host = host }
        if let port { configuration.port = port }
        if noMigrate { configuration.migrateOnStart = false }
        if noWorkers { configuration.runsWorkers = false }
        let logger = bootstrapLogging(level: configuration.logLevel, format: configuration.logFormat)
        DescriptorLimit.raiseToHardLimit(logger: logger)
        bootstrapMetrics(configuration.metrics)
        let app = try buildApplication(configuration, logger: logger)
        try await runUntilTerminated([app], drainTime: configuration.drainTime, logger: logger)
    }
}
