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
        let url = try databaseURL(environment)
        let folder =
            try directory.map { URL(fileURLWithPath: $0) } ?? Migrator.defaultDirectory()
            ?? {
                throw ValidationError("Cannot find the Migrations folder; pass --directory or set NOTIFIABLE_MIGRATIONS_DIR.")
            }()
        let migrations = try Migrator.load(from: folder)
        let applied: [Migration]
        do {
            applied = try await withDatabase(url: url, logger: logger) { client in
                try await Migrator(client: client, logger: logger).migrate(migrations)
            }
        } catch let error as MigrationError {
            throw error
        } catch {
            throw CommandFailure("Migrating \(DatabaseURL.redacted(url)) (DATABASE_URL) failed: \(databaseErrorText(error))")
        }
        print(
            applied.isEmpty
                ? "Schema is up to date (\(migrations.count) migrations)."
                : "Applied \(applied.map(\.fileName).joined(separator: ", ")).")
    }
}

/// DATABASE_URL, checked, or an error that names the variable.
func databaseURL(_ environment: [String: String]) throws -> String {
    guard let url = environment["DATABASE_URL"], !url.isEmpty else {
        throw ValidationError("DATABASE_URL is not set; set it to postgres://user:password@127.0.0.1:5432/notifiable")
    }
    do {
        _ = try DatabaseURL.servers(from: url)
        return url
    } catch {
        throw ValidationError("DATABASE_URL \(error)")
    }
}
