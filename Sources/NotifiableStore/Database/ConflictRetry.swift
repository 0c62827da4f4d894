import PostgresNIO

/// Runs `transaction` again, `attempts` times at most in all, when PostgreSQL ended it over a
/// conflict with another writer: a row with the same unique key committed meanwhile (23505), or
/// two transactions took the same rows in opposite orders (40P01). Run again, it sees the new state.
func retryingConflicts<Result>(attempts: Int = 4, _ transaction: () async throws -> Result) async throws -> Result {
    var attempt = 0
    while true {
        attempt += 1
        do {
            return try await transaction()
        } catch let error as PostgresTransactionError where attempt < attempts {
            guard let cause = error.closureError as? PSQLError, cause.isUniqueViolation || cause.isDeadlock else { throw error }
        }
    }
}
