import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

@Suite struct DatabaseErrorTextTests {
    @Test func aUniqueViolationIsDescribedWithoutTheRowsValues() async throws {
        try await withTestService { _, service in
            let app = try await service.createApp()
            let token = String(repeating: "5e", count: 32)
            let insert: PostgresQuery = "INSERT INTO devices (app_id, provider, token) VALUES (\(app.app.id), 'apns', \(token))"
            try await service.postgres.query(insert, logger: TestDatabase.logger)
            let error = await #expect(throws: PSQLError.self) {
                try await service.postgres.query(insert, logger: TestDatabase.logger)
            }
            let text = databaseErrorText(try #require(error))
            #expect(text.contains("devices_app_token_key"))
            #expect(text.contains("SQLSTATE 23505"))
            #expect(!text.contains(token))
        }
    }
}
