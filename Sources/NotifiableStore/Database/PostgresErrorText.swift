import PostgresNIO

/// A readable one-line account of a database error: the server's message, detail and hint
/// when the server sent them (PSQLError's own description hides them to avoid leaking data).
/// The detail of an integrity violation (SQLSTATE class 23) is left out: it repeats the row's
/// values (`Key (app_id, lower(token))=(3, 4f8a…)`), device tokens included, and logs must not
/// hold those; the message names the constraint, which is what a reader needs.
public func databaseErrorText(_ error: any Error) -> String {
    guard let psql = error as? PSQLError else { return String(describing: error) }
    guard let info = psql.serverInfo else { return "\(psql.code)" }
    var parts: [String] = []
    if let message = info[.message] { parts.append(message) }
    if let detail = info[.detail] {
        parts.append(info[.sqlState]?.hasPrefix("23") == true ? "detail withheld (it repeats row values)" : "detail: \(detail)")
    }
    if let hint = info[.hint] { parts.append("hint: \(hint)") }
    if let state = info[.sqlState] { parts.append("SQLSTATE \(state)") }
    return parts.isEmpty ? "\(psql.code)" : parts.joined(separator: "; ")
}

extension PSQLError {
    /// SQLSTATE 23505: a unique constraint refused the write.
    var isUniqueViolation: Bool { serverInfo?[.sqlState] == "23505" }
    /// SQLSTATE 40P01: two transactions waited on each other; one was rolled back.
    var isDeadlock: Bool { serverInfo?[.sqlState] == "40P01" }
}
