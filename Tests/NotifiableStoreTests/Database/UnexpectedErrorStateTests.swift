import Testing

@testable import NotifiableStore

/// PgBouncer's FATAL for a lost server connection, as postgres-nio 1.33.2 described it when it
/// arrived unexpected (the line topology_failover's logs showed): its SQLSTATE is read from there.
@Suite struct UnexpectedErrorStateTests {
    static let seen = #"""
        PSQLError(code: unexpectedBackendMessage, backendMessage: .error(PostgresNIO.PostgresBackendMessage.ErrorResponse(fields: [Message: "server conn crashed?", Localized Severity: "FATAL", Code: "08P01"])), triggeredFromRequestInFile: NotifiableStore/Database.swift, line: 205, query: PostgresQuery(sql: BEGIN, binds: []))
        """#

    @Test func theSQLStateOfAnUnexpectedErrorResponseIsRead() {
        #expect(sqlState(inUnexpectedErrorDescription: Self.seen) == "08P01")
    }

    @Test func anUnexpectedMessageThatIsNoErrorHasNoSQLState() {
        #expect(sqlState(inUnexpectedErrorDescription: "PSQLError(code: unexpectedBackendMessage, backendMessage: .readyForQuery(.idle))") == nil)
        #expect(sqlState(inUnexpectedErrorDescription: #"backendMessage: .error(ErrorResponse(fields: [Code: "0"]))"#) == nil)
    }
}
