import ArgumentParser
import Foundation
import NotifiableStore
import PostgresNIO

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply pending migrations from Migrations/ (each once, in order, in a transaction, under a lock)."
    )

    @Option(help: "The folder of NNNN_name.sql files (default: NOTIFIABLE_MIGRATIONS_DIR, ./Migrations, or the one beside the build).")
    var directory: String?

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let logger = bootstrapLogging(level: .notice)
        let postgres = try databaseConfiguration(environment)
        let folder =
            try directory.map { URL(fileURLWithPath: $0) } ?? Migrator.defaultDirectory()
            ?? {
                throw ValidationError("Cannot find the Migrations folder; pass --directory or set NOTIFIABLE_MIGRATIONS_DIR.")
            }()
        let migrations = try Migrator.load(from: folder)
        let applied = try await withPostgresClient(postgres, logger: logger) { client in
            try await Migrator(client: client, logger: logger).migrate(migrations)
        }
        print(
            applied.isEmpty
                ? "Schema is up to date (\(migrations.count) migrations)."
                : "Applied \(applied.map(\.fileName).joined(separator: ", ")).")
    }
}

/// The PostgreSQL settings from DATABASE_URL, or an error that names the variable.
func databaseConfiguration(_ environment: [String: String]) throws -> PostgresClient.Configuration {
    guard let url = environment["DATABASE_URL"], !url.isEmpty else {
        throw ValidationError("DATABASE_URL is not set; set it to postgres://user:password@127.0.0.1:5432/notifiable")
    }
    do {
        return try DatabaseURL.configuration(from: url)
    } catch {
        throw ValidationError("DATABASE_URL \(error)")
    }
}
