import Logging
import PostgresNIO

/// Runs `body` with a PostgreSQL client that is running for exactly that long: for commands
/// that do one job and exit (migrate, apps …).
public func withPostgresClient<T: Sendable>(
    _ configuration: PostgresClient.Configuration, logger: Logger,
    _ body: @Sendable (PostgresClient) async throws -> T
) async throws -> T {
    let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        defer { group.cancelAll() }
        return try await body(client)
    }
}
