import Foundation
import Logging
import NotifiableApp
import NotifiableCore
import NotifiableStore
import PostgresNIO

/// The PostgreSQL cluster that `scripts/test` starts, named by `DATABASE_URL`.
public enum TestDatabase {
    public struct NotConfigured: Error, CustomStringConvertible {
        public var description: String {
            "DATABASE_URL is not set: run the tests through scripts/test, which starts a PostgreSQL for them."
        }
    }

    public static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty else { throw NotConfigured() }
        return url
    }

    /// A server configuration over the test database, with a master key of its own.
    public static func serverConfiguration() throws -> ServerConfiguration {
        var configuration = ServerConfiguration(databaseURL: try url(), masterKey: masterKey)
        configuration.databasePoolSize = 4
        configuration.migrationsDirectory = migrationsDirectory
        // Workers only where a test asks for them; then quick to retry and to notice work.
        configuration.runsWorkers = false
        configuration.adminToken = "test-admin-token-\(UInt64.random(in: 0...UInt64.max))"
        configuration.worker.pollInterval = .milliseconds(50)
        configuration.worker.maintenanceInterval = .milliseconds(200)
        configuration.worker.retryPolicy.baseDelay = .milliseconds(50)
        configuration.worker.retryPolicy.maxDelay = .seconds(1)
        // A push that times out is sent again (its outcome is unknown), which would break the exact
        // counts tests assert; so the timeout is long enough for a starved machine, and the lease
        // holds several sends of it. No test waits for either to run out.
        configuration.worker.lease = .seconds(45)
        configuration.syncSignalDelay = .milliseconds(300)
        configuration.apnsRequestTimeout = .seconds(15)
        configuration.webhooks.pollInterval = .milliseconds(50)
        configuration.webhooks.retryPolicy.baseDelay = .milliseconds(50)
        configuration.webhooks.retryPolicy.maxDelay = .milliseconds(400)
        configuration.webhooks.requestTimeout = .seconds(5)
        // Test services share one database, so each would hold 1/N of every limit, N changing with
        // the tests running at that moment; the rate-limit tests set their own, on databases of their own.
        configuration.rateLimits = RateLimits(perCredential: [:], perApp: [:])
        return configuration
    }

    /// One key for the whole test run: every test's secrets live in the same database.
    public static let masterKey = MasterKey.generate()

    /// The package's own `Migrations/`, found from this file's place in the source tree.
    public static var migrationsDirectory: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Migrations")
    }

    public static var logger: Logger {
        var logger = Logger(label: "notifiable-test")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        return logger
    }

    /// Runs `body` with the URL of a new, empty database, dropped afterwards.
    public static func withFreshDatabase<T: Sendable>(_ body: @Sendable (String) async throws -> T) async throws -> T {
        let base = try url()
        let name = "fresh_\(UInt64.random(in: 0...UInt64.max))"
        guard var components = URLComponents(string: base) else { throw NotConfigured() }
        components.path = "/\(name)"
        let freshURL = components.string ?? base
        let logger = self.logger
        return try await withPostgresClient(try DatabaseURL.configuration(from: base), logger: logger) { admin in
            try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
            do {
                let result = try await body(freshURL)
                try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(name) WITH (FORCE)"), logger: logger)
                return result
            } catch {
                _ = try? await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(name) WITH (FORCE)"), logger: logger)
                throw error
            }
        }
    }
}
