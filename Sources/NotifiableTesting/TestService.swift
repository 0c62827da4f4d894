import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NotifiableApp
import NotifiableCore
import NotifiableStore
import PostgresNIO

/// The running service under test and direct access to its database for fixtures and checks.
public struct TestService: Sendable {
    public let postgres: Database
    public let configuration: ServerConfiguration

    public init(postgres: Database, configuration: ServerConfiguration) {
        self.postgres = postgres
        self.configuration = configuration
    }

    public var apps: AppStore {
        AppStore(client: postgres, keys: configuration.keys, logger: TestDatabase.logger)
    }

    /// A new app: each test works inside apps of its own, so tests never see each other's data.
    public func createApp(name: String = "Test app") async throws -> AppStore.CreatedApp {
        try await apps.create(name: name)
    }

    /// Runs a query whose single row and column is an integer (counts, ids).
    public func integer(_ query: PostgresQuery) async throws -> Int64? {
        for try await value in try await postgres.query(query, logger: TestDatabase.logger).decode(Int64?.self) {
            return value
        }
        return nil
    }

    /// Runs a query whose rows are one integer each, in order.
    public func integers(_ query: PostgresQuery) async throws -> [Int64] {
        var values: [Int64] = []
        for try await value in try await postgres.query(query, logger: TestDatabase.logger).decode(Int64.self) { values.append(value) }
        return values
    }

    /// Runs a statement for a fixture, ignoring what it answers. A failure says what the server
    /// said (PSQLError's own description hides it).
    public func sql(_ query: PostgresQuery) async throws {
        do {
            try await postgres.query(query, logger: TestDatabase.logger)
        } catch {
            throw FixtureStatementFailed(statement: query.sql, error: databaseErrorText(error))
        }
    }

    /// Runs a query whose single row and column is text (for failure messages).
    public func text(_ query: PostgresQuery) async throws -> String? {
        for try await value in try await postgres.query(query, logger: TestDatabase.logger).decode(String?.self) {
            return value
        }
        return nil
    }
}

/// Builds the service exactly as `notifiable serve` does, over the test database, and runs
/// `body` against it through Hummingbird's test client (`.router`: no sockets) or a live
/// server (`.live`: real HTTP on a loopback port).
///
/// With `workers`, the service runs delivery workers too, over a database of its own: workers
/// take any app's deliveries, so sharing a database would let tests send each other's work.
/// `isolatedDatabase` gives a database of its own without workers (for tests that drive the
/// queue by hand).
public func withTestService<T: Sendable>(
    _ mode: TestingSetup = .router,
    workers: Bool = false,
    isolatedDatabase: Bool = false,
    logger: Logger = TestDatabase.logger,
    configure: (inout ServerConfiguration) -> Void = { _ in },
    _ body: @Sendable (any TestClientProtocol, TestService) async throws -> T
) async throws -> T {
    var configuration = try TestDatabase.serverConfiguration()
    configuration.runsWorkers = workers
    configure(&configuration)
    guard workers || isolatedDatabase else { return try await runTestService(configuration, mode, logger, body) }
    let shared = configuration
    return try await TestDatabase.withFreshDatabase { url in
        var isolated = shared
        isolated.databaseURL = url
        return try await runTestService(isolated, mode, logger, body)
    }
}

/// A service over the database at `databaseURL`, which outlives it: run one after another on
/// the same database to restart the service (`TestDatabase.withFreshDatabase` gives one).
public func withTestService<T: Sendable>(
    onDatabase databaseURL: String,
    workers: Bool = false,
    logger: Logger = TestDatabase.logger,
    configure: (inout ServerConfiguration) -> Void = { _ in },
    _ body: @Sendable (any TestClientProtocol, TestService) async throws -> T
) async throws -> T {
    var configuration = try TestDatabase.serverConfiguration()
    configuration.runsWorkers = workers
    configuration.databaseURL = databaseURL
    configure(&configuration)
    return try await runTestService(configuration, .router, logger, body)
}

private func runTestService<T: Sendable>(
    _ configuration: ServerConfiguration, _ mode: TestingSetup, _ logger: Logger,
    _ body: @Sendable (any TestClientProtocol, TestService) async throws -> T
) async throws -> T {
    let postgres = try makeDatabase(configuration, logger: logger)
    let app = try buildApplication(configuration, postgres: postgres, logger: logger)
    let service = TestService(postgres: postgres, configuration: configuration)
    return try await app.test(mode) { client in
        try await body(client, service)
    }
}

/// A fixture's statement the database refused, with the server's message.
public struct FixtureStatementFailed: Error, CustomStringConvertible {
    public let statement: String
    public let error: String
    public var description: String { "\(statement.prefix(200)): \(error)" }
}
