import Logging
import PostgresNIO

/// Runs `body` with the database running for exactly that long: for commands that do one job and
/// exit (migrate, apps …). With several hosts, it starts on the one that suits
/// `target_session_attrs` now.
public func withDatabase<T: Sendable>(
    url: String, connectTimeout: Duration? = nil, logger: Logger, _ body: @Sendable (Database) async throws -> T
) async throws -> T {
    let database = try Database(url: url, connectTimeout: connectTimeout, logger: quietPool(logger))
    _ = await database.chooseServer()
    return try await running(database, body)
}

/// The same for one server named by its configuration.
public func withPostgresClient<T: Sendable>(
    _ configuration: PostgresClient.Configuration, logger: Logger,
    _ body: @Sendable (Database) async throws -> T
) async throws -> T {
    try await running(Database(configuration: configuration, logger: quietPool(logger)), body)
}

/// The pool warns when asked for a connection a moment before run() has begun; that is expected
/// here and not worth a line on the operator's terminal.
private func quietPool(_ logger: Logger) -> Logger {
    var backgroundLogger = logger
    backgroundLogger.logLevel = max(logger.logLevel, .error)
    return backgroundLogger
}

private func running<T: Sendable>(_ database: Database, _ body: @Sendable (Database) async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await database.run() }
        defer { group.cancelAll() }
        return try await body(database)
    }
}
