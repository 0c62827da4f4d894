import PostgresNIO

/// Builds a query whose shape depends on input (targeting rules), keeping every value a bind
/// parameter: `bind` returns the `$n` placeholder to write into the text.
struct SQLBuilder {
    private(set) var sql = ""
    private(set) var binds = PostgresBindings()

    mutating func append(_ text: String) {
        sql += text
    }

    mutating func bind(_ value: some PostgresNonThrowingEncodable & Sendable) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: sql, binds: binds) }
}
