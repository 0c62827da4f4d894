import PostgresNIO

/// Whether `error` says the database could not be reached, rather than that it refused a
/// statement: the connection failed or was closed under the query, the server is shutting down
/// or starting up (SQLSTATE 57P01–57P03), a connection exception (class 08), a server that
/// refuses writes (25006, during a failover), no connection
/// slot left (53300), the pool gave up connecting, a pooler reporting its server connection lost,
/// or a statement was given up on at its deadline (`DatabaseDidNotAnswer`). Such a request may succeed when retried,
/// so the API answers 503 with Retry-After instead of a 500.
public func isDatabaseUnavailable(_ error: any Error) -> Bool {
    switch error {
    case let transaction as PostgresTransactionError:
        return [transaction.beginError, transaction.closureError, transaction.commitError]
            .contains { $0.map(isDatabaseUnavailable) ?? false }
    case is DatabaseDidNotAnswer:
        return true
    case let psql as PSQLError:
        switch psql.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
            return true
        case .server:
            guard let state = psql.serverInfo?[.sqlState] else { return false }
            return saysUnavailable(sqlState: state)
        case .unexpectedBackendMessage:
            // A pooler that loses its server connection (PgBouncer's FATAL "server conn crashed?",
            // 08P01) may say so when postgres-nio expects no error; it then reports the
            // ErrorResponse as unexpected, its SQLSTATE only in its description.
            guard let state = unexpectedErrorState(psql) else { return false }
            return saysUnavailable(sqlState: state)
        default:
            return false
        }
    default:
        // The pool's own error type is not public API. It trips after failing to connect for a
        // minute; it shuts down when the pool moves to another server (a promoted standby).
        return String(reflecting: error).contains("connectionCreationCircuitBreakerTripped") || Database.isShutdown(error)
    }
}

/// 25006: a write reached a server that has turned read-only (a primary demoted, or a standby
/// while the pool has not yet moved to the promoted one).
private func saysUnavailable(sqlState state: String) -> Bool {
    state.hasPrefix("08") || ["57P01", "57P02", "57P03", "53300", "25006"].contains(state)
}

/// The SQLSTATE of an ErrorResponse postgres-nio did not expect (`Code: "08P01"` in its
/// description: the message itself is not public API).
private func unexpectedErrorState(_ error: PSQLError) -> String? {
    sqlState(inUnexpectedErrorDescription: String(reflecting: error))
}

func sqlState(inUnexpectedErrorDescription text: String) -> String? {
    guard text.contains("backendMessage: .error("), let range = text.range(of: #"Code: ""#) else { return nil }
    let state = text[range.upperBound...].prefix(5)
    return state.count == 5 && state.allSatisfy({ $0.isNumber || $0.isUppercase }) ? String(state) : nil
}

/// Whether `error` is a foreign-key violation (SQLSTATE 23503): the row a write refers to was
/// deleted meanwhile, e.g. an app deleted by another process while a credential read just before
/// it is still remembered. The API answers 404, as for any object that does not exist.
public func isMissingReference(_ error: any Error) -> Bool {
    switch error {
    case let transaction as PostgresTransactionError:
        return [transaction.beginError, transaction.closureError, transaction.commitError]
            .contains { $0.map(isMissingReference) ?? false }
    case let psql as PSQLError:
        return psql.code == .server && psql.serverInfo?[.sqlState] == "23503"
    default:
        return false
    }
}

/// A statement given up on after its deadline: stranded on a connection that closed under it, or
/// held so long behind locks that the caller is better told to come back.
public struct DatabaseDidNotAnswer: Error, CustomStringConvertible {
    public let after: Duration
    public var description: String { "the database did not answer within \(after)" }
}
