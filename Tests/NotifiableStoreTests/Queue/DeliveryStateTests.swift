import Foundation
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// The delivery states are one vocabulary: the database's CHECK constraint allows exactly
/// `DeliveryState`'s raw values, and the OpenAPI document lists the same.
@Suite struct DeliveryStateTests {
    @Test func theDatabaseAllowsExactlyTheDeliveryStates() async throws {
        try await TestDatabase.withFreshDatabase { url in
            try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { client in
                try await Migrator(client: client, logger: TestDatabase.logger).migrate(try Migrator.load(from: TestDatabase.migrationsDirectory))
                var definition = ""
                for try await text in try await client.query(
                    """
                    SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
                    WHERE c.conrelid = 'deliveries'::regclass AND c.contype = 'c' AND pg_get_constraintdef(c.oid) LIKE '%state%'
                    """,
                    logger: TestDatabase.logger
                ).decode(String.self) { definition += text }
                let allowed = try NSRegularExpression(pattern: #"'([a-z_]+)'::text"#)
                    .matches(in: definition, range: NSRange(definition.startIndex..., in: definition))
                    .compactMap { Range($0.range(at: 1), in: definition).map { String(definition[$0]) } }
                #expect(Set(allowed) == Set(DeliveryState.names), "\(definition)")
            }
        }
    }

    @Test func theAPIDocumentListsTheSameStates() throws {
        let document = try JSONValue.decode(
            try Data(
                contentsOf: TestDatabase.migrationsDirectory.deletingLastPathComponent()
                    .appendingPathComponent("Sources/NotifiableApp/OpenAPI/openapi.json")))
        let parameters = document["paths"]?["/api/v1/notifications/{id}/deliveries"]?["get"]?["parameters"]?.arrayValue ?? []
        let state = try #require(parameters.first { $0["name"]?.stringValue == "state" })
        let listed = state["schema"]?["enum"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(listed == DeliveryState.names)
    }

    @Test func waitingAndFinalStatesSplitTheRest() {
        #expect(DeliveryState.allCases.filter(\.isWaiting) == [.available, .retrying])
        #expect(DeliveryState.allCases.filter(\.isFinal) == [.sent, .failed, .dead, .cancelled])
        #expect(DeliveryState.allCases.filter { !$0.isWaiting && !$0.isFinal } == [.running])
    }
}
