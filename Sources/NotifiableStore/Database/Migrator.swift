import Crypto
import Foundation
import Logging
import PostgresNIO

/// One file of `Migrations/`, named `NNNN_description.sql`.
public struct Migration: Sendable, Equatable {
    public let version: String
    public let fileName: String
    public let sql: String

    /// SHA-256 of the file, recorded when applied: a landed migration must never change.
    public var checksum: String { Self.checksum(of: sql) }

    /// SHA-256 of a file's text, in hex: what the migrator records of each file it applies.
    static func checksum(of sql: String) -> String {
        SHA256.hash(data: Data(sql.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    public init(version: String, fileName: String, sql: String) {
        self.version = version
        self.fileName = fileName
        self.sql = sql
    }
}

public struct MigrationError: Error, CustomStringConvertible {
    public let description: String

    public init(description: String) {
        self.description = description
    }
}

/// Applies migrations in order, each once, each in its own transaction, under an advisory
/// lock so that processes starting together wait for one another instead of racing.
///
/// The lock is a transaction's (`pg_advisory_xact_lock`), taken again by each migration's own
/// transaction, which then looks once more whether another process applied it meanwhile. A
/// session's lock would be held across transactions, and behind a pooler in transaction mode
/// (PgBouncer's `pool_mode = transaction`) consecutive transactions of one client may run on
/// different server connections: the unlock would miss, or the lock would stay with a connection
/// that serves someone else.
public struct Migrator: Sendable {
    /// Arbitrary but fixed: every NotifiableServer process agrees on it.
    static let advisoryLockKey: Int64 = 0x4E6F_7469_6669_6162  // "Notifiab"

    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Reads every `*.sql` file of `directory`, ordered by version.
    public static func load(from directory: URL) throws -> [Migration] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
        var seen: [String: String] = [:]
        return try names.map { name in
            let version = String(name.prefix(while: \.isNumber))
            guard !version.isEmpty, name.dropFirst(version.count).first == "_" else {
                throw MigrationError(description: "\(name): migration files are named NNNN_description.sql")
            }
            if let other = seen[version] {
                throw MigrationError(description: "\(name) and \(other) share version \(version); give each file its own number")
            }
            seen[version] = name
            let sql = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            return Migration(version: version, fileName: name, sql: sql)
        }
    }

    /// The `Migrations` folder: `NOTIFIABLE_MIGRATIONS_DIR`, else `./Migrations`, else the
    /// nearest one above the running executable (so a build run from anywhere finds its own).
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL? {
        if let explicit = environment["NOTIFIABLE_MIGRATIONS_DIR"], !explicit.isEmpty {
            return URL(fileURLWithPath: explicit)
        }
        let fileManager = FileManager.default
        var candidates = [URL(fileURLWithPath: fileManager.currentDirectoryPath)]
        var directory = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath().deletingLastPathComponent()
        while directory.path != "/" && !directory.path.isEmpty {
            candidates.append(directory)
            directory.deleteLastPathComponent()
        }
        return candidates.map { $0.appendingPathComponent("Migrations") }.first { url in
            var isDirectory: ObjCBool = false
            return fileManager.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
        }
    }

    /// Applies the migrations not applied yet, then the stored function files whose text changed
    /// (`functions`, or the service's own when nil); returns the migrations it applied.
    ///
    /// Pass `functions: []` to stop at a schema short of the newest: the files are written for
    /// the newest schema.
    @discardableResult
    public func migrate(_ migrations: [Migration], functions: [StoredFunctionFile]? = nil) async throws -> [Migration] {
        // Read before anything is applied: a build without its files changes nothing.
        let functions = try functions ?? StoredFunctionFile.bundled()
        let recorded = try await Self.unwrapped {
            try await client.withConnection { connection in
                try await connection.withTransaction(logger: logger) { connection in
                    try await lock(connection)
                    try await connection.query(
                        """
                        CREATE TABLE IF NOT EXISTS schema_migrations (
                            version     text PRIMARY KEY,
                            file_name   text NOT NULL,
                            checksum    text NOT NULL,
                            applied_at  timestamptz NOT NULL DEFAULT now()
                        )
                        """,
                        logger: logger
                    )
                    return try await acceptingEarlierTexts(try await recordedChecksums(connection), of: migrations, connection)
                }
            }
        }
        var applied: [Migration] = []
        for migration in migrations {
            if let checksum = recorded[migration.version] {
                try Self.check(migration, recordedChecksum: checksum)
                continue
            }
            if try await apply(migration) {
                applied.append(migration)
                logger.info("applied migration", metadata: ["migration": "\(migration.fileName)"])
            }
        }
        try await apply(functions)
        return applied
    }

    /// A database that applied the migrations which once defined the stored functions, as they
    /// were written then (`earlierChecksums`), has the same schema: their records take today's
    /// checksums. Only when it applied all of them: one that stopped before the last would run the
    /// rest without the functions and triggers its data moves were written beside.
    private func acceptingEarlierTexts(
        _ recorded: [String: String], of migrations: [Migration], _ connection: PostgresConnection
    ) async throws -> [String: String] {
        let earlier = recorded.filter { Self.earlierChecksums[$0.key] == $0.value }
        guard !earlier.isEmpty else { return recorded }
        let missing = Self.earlierChecksums.keys.filter { recorded[$0] == nil }.sorted()
        guard missing.isEmpty else {
            throw MigrationError(
                description: """
                    this database stopped before migration \(missing[0]), applied as it was written before stored functions \
                    moved to their own files; migrate it first with a build of \(Self.lastBuildWithEarlierTexts) or earlier \
                    (`notifiable migrate`), then with this one
                    """)
        }
        var recorded = recorded
        for migration in migrations where earlier[migration.version] != nil {
            try await connection.query(
                "UPDATE schema_migrations SET checksum = \(migration.checksum) WHERE version = \(migration.version)", logger: logger)
            recorded[migration.version] = migration.checksum
        }
        return recorded
    }

    /// Applies, in one transaction under the lock, the files whose text differs from the one
    /// recorded in `schema_functions`; all or none.
    private func apply(_ files: [StoredFunctionFile]) async throws {
        guard !files.isEmpty else { return }
        do {
            let applied = try await Self.unwrapped {
                try await client.withConnection { connection in
                    try await connection.withTransaction(logger: logger) { connection in
                        try await lock(connection)
                        try await connection.query(
                            """
                            CREATE TABLE IF NOT EXISTS schema_functions (
                                file_name   text PRIMARY KEY,
                                checksum    text NOT NULL,
                                applied_at  timestamptz NOT NULL DEFAULT now()
                            )
                            """,
                            logger: logger
                        )
                        var recorded: [String: String] = [:]
                        for try await (name, checksum) in try await connection.query(
                            "SELECT file_name, checksum FROM schema_functions", logger: logger
                        ).decode((String, String).self) {
                            recorded[name] = checksum
                        }
                        var applied: [String] = []
                        for file in files where recorded[file.fileName] != file.checksum {
                            for statement in SQLScript.statements(in: file.sql) {
                                do {
                                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                                } catch {
                                    throw MigrationError(
                                        description: "\(file.fileName) failed and was rolled back with every stored function file: \(databaseErrorText(error))"
                                    )
                                }
                            }
                            try await connection.query(
                                """
                                INSERT INTO schema_functions (file_name, checksum) VALUES (\(file.fileName), \(file.checksum))
                                ON CONFLICT (file_name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()
                                """,
                                logger: logger
                            )
                            applied.append(file.fileName)
                        }
                        return applied
                    }
                }
            }
            for name in applied { logger.info("applied stored functions", metadata: ["file": "\(name)"]) }
        } catch let error as MigrationError {
            throw error
        } catch {
            throw MigrationError(description: "the stored function files failed and were rolled back: \(databaseErrorText(error))")
        }
    }

    /// What went wrong inside a transaction, rather than the transaction's wrapper of it.
    private static func unwrapped<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresTransactionError {
            throw error.closureError ?? error.beginError ?? error.commitError ?? error
        }
    }

    private func lock(_ connection: PostgresConnection) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.advisoryLockKey))", logger: logger)
    }

    private func recordedChecksums(_ connection: PostgresConnection, version: String? = nil) async throws -> [String: String] {
        var recorded: [String: String] = [:]
        for try await (version, checksum) in try await connection.query(
            "SELECT version, checksum FROM schema_migrations WHERE \(version)::text IS NULL OR version = \(version)::text", logger: logger
        ).decode((String, String).self) {
            recorded[version] = checksum
        }
        return recorded
    }

    private static func check(_ migration: Migration, recordedChecksum: String) throws {
        guard recordedChecksum == migration.checksum else {
            throw MigrationError(
                description: "\(migration.fileName) changed after it was applied; migrations are append-only, so put the change in a new file"
            )
        }
    }

    /// Applies `migration` unless another process did first; whether this call applied it.
    private func apply(_ migration: Migration) async throws -> Bool {
        let statements = SQLScript.statements(in: migration.sql)
        do {
            return try await client.withConnection { connection in
                try await connection.withTransaction(logger: logger) { connection in
                    try await lock(connection)
                    if let checksum = try await recordedChecksums(connection, version: migration.version)[migration.version] {
                        try Self.check(migration, recordedChecksum: checksum)
                        return false
                    }
                    for statement in statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query(
                        """
                        INSERT INTO schema_migrations (version, file_name, checksum)
                        VALUES (\(migration.version), \(migration.fileName), \(migration.checksum))
                        """,
                        logger: logger
                    )
                    return true
                }
            }
        } catch let error as MigrationError {
            throw error
        } catch {
            let cause = (error as? PostgresTransactionError)?.closureError ?? error
            if let refusal = cause as? MigrationError { throw refusal }
            throw MigrationError(
                description: "\(migration.fileName) failed and was rolled back, leaving the schema as it was: \(databaseErrorText(cause))"
            )
        }
    }
}
