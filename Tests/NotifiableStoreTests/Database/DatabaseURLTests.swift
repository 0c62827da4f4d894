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

/// Several hosts, as libpq takes them: each keeps the URL's user, database and settings, and
/// `target_session_attrs` says which role the service looks for among them.
@Suite struct MultiHostDatabaseURLTests {
    @Test func eachHostOfTheListIsAServerWithTheSameUserDatabaseAndSettings() throws {
        let (servers, target) = try DatabaseURL.servers(
            from: "postgres://app:p%40ss@db1:5432,db2.internal:6543,[::1]/push?sslmode=disable&target_session_attrs=read-write")
        #expect(servers.map(\.name) == ["db1:5432", "db2.internal:6543", "[::1]:5432"])
        #expect(servers.map(\.client.host) == ["db1", "db2.internal", "::1"])
        #expect(servers.allSatisfy { $0.client.username == "app" && $0.client.password == "p@ss" && $0.client.database == "push" })
        #expect(target == .readWrite)
        #expect(
            DatabaseURL.redacted("postgres://app:secret@db1:5432,db2:6543/push") == "db1:5432,db2:6543/push",
            "no password in messages")
    }

    @Test func oneHostIsOneServerAndAnyRoleWillDo() throws {
        let (servers, target) = try DatabaseURL.servers(from: "postgres://app@db/push")
        #expect(servers.map(\.name) == ["db:5432"])
        #expect(target == .any)
    }

    @Test func refusesAnEmptyHostOrAnUnknownTarget() {
        #expect(throws: DatabaseURL.Invalid.self) { try DatabaseURL.servers(from: "postgres://u@db1,,db2/push") }
        #expect(throws: DatabaseURL.Invalid.self) { try DatabaseURL.servers(from: "postgres://u@db1,db2/push?target_session_attrs=leader") }
    }

    /// What each `target_session_attrs` accepts, as libpq documents them.
    @Test func eachTargetAcceptsTheRolesLibpqSays() {
        let primary = ServerRole(inRecovery: false, readOnly: false)
        let readOnlyPrimary = ServerRole(inRecovery: false, readOnly: true)
        let standby = ServerRole(inRecovery: true, readOnly: true)
        let cases: [(TargetSessionAttributes, [Bool])] = [
            (.any, [true, true, true]),
            (.readWrite, [true, false, false]),
            (.primary, [true, true, false]),
            (.readOnly, [false, true, true]),
            (.standby, [false, false, true]),
            (.preferStandby, [false, false, true]),
        ]
        for (target, accepted) in cases {
            #expect([primary, readOnlyPrimary, standby].map { target.accepts($0, fallback: false) } == accepted, "\(target)")
        }
        #expect(TargetSessionAttributes.preferStandby.accepts(primary, fallback: true), "prefer-standby falls back to any server")
    }
}
