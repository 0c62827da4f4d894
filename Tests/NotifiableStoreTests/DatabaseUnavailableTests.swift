import Logging
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

@Suite struct DatabaseUnavailableTests {
    @Test func aDatabaseThatCannotBeReachedIsUnavailable() async throws {
        var configuration = try DatabaseURL.connectionConfiguration(from: "postgres://notifiable@127.0.0.1:1/none?sslmode=disable")
        configuration.options.connectTimeout = .seconds(2)
        let error = await #expect(throws: (any Error).self) {
            try await PostgresConnection.connect(configuration: configuration, id: 1, logger: TestDatabase.logger)
        }
        let unreachable = try #require(error)
        #expect(isDatabaseUnavailable(unreachable))
    }

    @Test func aStatementTheDatabaseRefusesIsNotUnavailability() async throws {
        try await withTestService { _, service in
            let syntax = await #expect(throws: PSQLError.self) {
                try await service.postgres.query("SELEC 1", logger: TestDatabase.logger)
            }
            let refused = try #require(syntax)
            #expect(!isDatabaseUnavailable(refused))
            let inTransaction = await #expect(throws: PostgresTransactionError.self) {
                try await service.postgres.withTransaction(logger: TestDatabase.logger) { connection in
                    try await connection.query("SELECT 1/0", logger: TestDatabase.logger)
                }
            }
            let rolledBack = try #require(inTransaction)
            #expect(!isDatabaseUnavailable(rolledBack))
        }
    }
}
