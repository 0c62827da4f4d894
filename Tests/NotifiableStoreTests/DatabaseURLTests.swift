import NotifiableStore
import Testing

@Suite struct DatabaseURLTests {
    @Test func readsUserPasswordHostPortAndDatabase() throws {
        let configuration = try DatabaseURL.configuration(from: "postgres://app:p%40ss@db.internal:6543/push?sslmode=disable")
        #expect(configuration.username == "app")
        #expect(configuration.password == "p@ss")
        #expect(configuration.database == "push")
        #expect(configuration.host == "db.internal")
        #expect(configuration.port == 6543)
    }

    @Test func refusesWhatIsNotAPostgresURL() {
        #expect(throws: DatabaseURL.Invalid.self) { try DatabaseURL.configuration(from: "mysql://u@h/db") }
        #expect(throws: DatabaseURL.Invalid.self) { try DatabaseURL.configuration(from: "postgres://h/db") }
        #expect(throws: DatabaseURL.Invalid.self) { try DatabaseURL.configuration(from: "postgres://u@h/db?sslmode=sometimes") }
    }
}
