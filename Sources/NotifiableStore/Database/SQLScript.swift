/// Splits a migration file into statements. PostgreSQL's extended query protocol, which
/// PostgresNIO speaks, takes one statement per query, so a file is run statement by statement.
///
/// Semicolons inside quotes, quoted identifiers, dollar-quoted bodies (`$$ … $$`,
/// `$tag$ … $tag$`) and comments do not end a statement.
public enum SQLScript {
    public static func statements(in script: String) -> [String] {
        let chars = Array(script.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var hasCode = false  // whether `current` holds more than whitespace and comments
        var i = 0

        func flush() {
            let text = String(current).trimmingWhitespace()
            if hasCode, !text.isEmpty { statements.append(text) }
            current = String.UnicodeScalarView()
            hasCode = false
        }
        func take(_ count: Int) {
            current.append(contentsOf: chars[i..<min(i + count, chars.count)])
            i += count
        }
        func starts(with prefix: [Unicode.Scalar], at index: Int) -> Bool {
            index + prefix.count <= chars.count && Array(chars[index..<index + prefix.count]) == prefix
        }

        while i < chars.count {
            let c = chars[i]
            let next: Unicode.Scalar? = i + 1 < chars.count ? chars[i + 1] : nil
            switch c {
            case "-" where next == "-":
                while i < chars.count, chars[i] != "\n" { take(1) }
            case "/" where next == "*":
                // Block comments nest in PostgreSQL.
                var depth = 0
                repeat {
                    if starts(with: ["/", "*"], at: i) {
                        depth += 1
                        take(2)
                    } else if starts(with: ["*", "/"], at: i) {
                        depth -= 1
                        take(2)
                    } else {
                        take(1)
                    }
                } while depth > 0 && i < chars.count
            case "'", "\"":
                hasCode = true
                take(1)
                while i < chars.count {
                    if chars[i] == c {
                        // A doubled quote is an escaped quote, not the end.
                        if i + 1 < chars.count, chars[i + 1] == c {
                            take(2)
                            continue
                        }
                        take(1)
                        break
                    }
                    take(1)
                }
            case "$":
                hasCode = true
                // `$` inside an identifier (a$b) or a parameter ($1) opens no quote.
                let afterIdentifier =
                    i > 0
                    && (chars[i - 1] == "_" || chars[i - 1].properties.isAlphabetic
                        || ("0"..."9").contains(chars[i - 1]))
                if !afterIdentifier, let tag = dollarTag(chars, at: i) {
                    take(tag.count)
                    while i < chars.count, !starts(with: tag, at: i) { take(1) }
                    take(tag.count)
                } else {
                    take(1)
                }
            case ";":
                flush()
                i += 1
            default:
                if !c.properties.isWhitespace { hasCode = true }
                take(1)
            }
        }
        flush()
        return statements
    }

    /// `$$` or `$name$` starting at `index`, where name is an identifier; nil otherwise (e.g. `$1`).
    private static func dollarTag(_ chars: [Unicode.Scalar], at index: Int) -> [Unicode.Scalar]? {
        var j = index + 1
        while j < chars.count, chars[j] != "$" {
            let c = chars[j]
            let isIdentifier = c == "_" || c.properties.isAlphabetic || (j > index + 1 && ("0"..."9").contains(c))
            guard isIdentifier else { return nil }
            j += 1
        }
        guard j < chars.count else { return nil }
        return Array(chars[index...j])
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[start...end])
    }
}
