import Logging
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// The error `body` throws, if any. A do/catch rather than the value of `#expect(throws:)`, after
/// which the test process crashed releasing a closure's locals (see DatabaseErrorTextTests).
private func thrownError(_ body: () async throws -> Void) async -> (any Error)? {
    do {
        try await body()
        return nil
    } catch {
        return error
    }
}

@Suite struct DatabaseUnavailableTests {
    @Test func aDatabaseThatCannotBeReachedIsUnavailable() async throws {
        var configuration = try DatabaseURL.connectionConfiguration(from: "postgres://notifiable@127.0.0.1:1/none?sslmode=disable")
        configuration.options.connectTimeout = .seconds(2)
        let error = await thrownError {
            _ = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: TestDatabase.logger)
        }
        let unreachable = try #require(error, "connecting to a closed port succeeded")
        #expect(isDatabaseUnavailable(unreachable))
        #expect(!isMissingReference(unreachable))
    }

    @Test func aStatementTheDatabaseRefusesIsNotUnavailability() async throws {
        try await withTestService { _, service in
            let syntax = await thrownError { _ = try await service.postgres.query("SELEC 1", logger: TestDatabase.logger) }
            let refused = try #require(syntax as? PSQLError, "a syntax error did not fail with a PSQLError")
            #expect(!isDatabaseUnavailable(refused))
            #expect(!isMissingReference(refused))
            let inTransaction = await thrownError {
                try await service.postgres.withTransaction(logger: TestDatabase.logger) { connection in
                    _ = try await connection.query("SELECT 1/0", logger: TestDatabase.logger)
                }
            }
            let rolledBack = try #require(inTransaction as? PostgresTransactionError, "1/0 did not fail its transaction")
            #expect(!isDatabaseUnavailable(rolledBack))
        }
    }

    @Test func aWriteThatRefersToADeletedRowIsAMissingReference() async throws {
        try await withTestService { _, service in
            let missingApp = await thrownError {
                _ = try await service.postgres.query(
                    "INSERT INTO devices (app_id, provider, token) VALUES (-1, 'apns', 'ab')", logger: TestDatabase.logger
                )
            }
            let refused = try #require(missingApp, "a device of an app that does not exist was stored")
            #expect(isMissingReference(refused))
            #expect(!isDatabaseUnavailable(refused))
        }
    }
}
