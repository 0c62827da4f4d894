import Logging
import PostgresNIO

/// Runs `body` with a PostgreSQL client that is running for exactly that long: for commands
/// that do one job and exit (migrate, apps …).
public func withPostgresClient<T: Sendable>(
    _ configuration: PostgresClient.Configuration, logger: Logger,
    _ body: @Sendable (PostgresClient) async throws -> T
) async throws -> T {
    // The pool warns when asked for a connection a moment before run() has begun; that is
    // expected here and not worth a line on the operator's terminal.
    var backgroundLogger = logger
    backgroundLogger.logLevel = max(logger.logLevel, .error)
    let client = PostgresClient(configuration: configuration, backgroundLogger: backgroundLogger)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        defer { group.cancelAll() }
        return try await body(client)
    }
}
