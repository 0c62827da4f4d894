import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

@Suite struct DatabaseErrorTextTests {
    @Test func aUniqueViolationIsDescribedWithoutTheRowsValues() async throws {
        try await withTestService { _, service in
            let appID = try await service.createApp().app.id
            let token = String(repeating: "5e", count: 32)
            let insert: PostgresQuery = "INSERT INTO devices (app_id, provider, token) VALUES (\(appID), 'apns', \(token))"
            try await service.postgres.query(insert, logger: TestDatabase.logger)
            // A do/catch rather than the value of `#expect(throws:)`: the test process crashed twice
            // releasing this closure's locals after that form (Swift 6.3.1).
            var text: String?
            do {
                try await service.postgres.query(insert, logger: TestDatabase.logger)
            } catch let error as PSQLError {
                text = databaseErrorText(error)
            }
            let described = try #require(text, "inserting the same token twice did not fail with a PSQLError")
            #expect(described.contains("devices_app_token_key"))
            #expect(described.contains("SQLSTATE 23505"))
            #expect(!described.contains(token))
        }
    }
}
