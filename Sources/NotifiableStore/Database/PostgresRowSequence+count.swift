import PostgresNIO

extension PostgresRowSequence {
    /// How many rows the statement returned (`RETURNING id` of an UPDATE counts what it changed).
    func count() async throws -> Int {
        var count = 0
        for try await _ in self { count += 1 }
        return count
    }
}
