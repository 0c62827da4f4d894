import Foundation
import NotifiableStore
import NotifiableTesting
import Testing

/// docs/operations.md, *Upgrades*: from 0018 on, a migration is compatible with the previous
/// release, so that processes can be replaced one by one; one that cannot be says so in its header,
/// and the operations page names it.
@Suite struct MigrationCompatibilityTests {
    /// What the previous release's queries would trip on, as patterns over the SQL without its comments.
    static let incompatible: [(pattern: String, why: String)] = [
        (#"\bDROP\s+COLUMN\b"#, "drops a column the previous release may read"),
        (#"\bRENAME\s+(COLUMN\s+)?\w+\s+TO\b"#, "renames a column"),
        (#"\bALTER\s+TABLE\s+\w+\s+RENAME\s+TO\b"#, "renames a table"),
        (#"\bALTER\s+COLUMN\s+\w+\s+(SET\s+DATA\s+)?TYPE\b"#, "changes a column's type"),
        (#"\bSET\s+NOT\s+NULL\b"#, "makes a column required that the previous release may leave empty"),
        (#"\bADD\s+COLUMN\s+(IF\s+NOT\s+EXISTS\s+)?\w+\s+[^,;]*\bNOT\s+NULL\b(?![^,;]*\bDEFAULT\b)"#, "adds a required column without a default"),
        (#"\bDROP\s+(TABLE|FUNCTION|VIEW|TYPE)\b"#, "drops something the previous release may use"),
    ]

    @Test func everyMigrationFrom0018IsCompatibleWithThePreviousReleaseOrSaysWhyNot() throws {
        let folder = TestDatabase.migrationsDirectory
        let operations = try String(contentsOf: folder.deletingLastPathComponent().appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        let ruled = files.filter { (Int($0.prefix(4)) ?? 0) >= 18 }
        #expect(!ruled.isEmpty)
        for file in ruled {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            let number = String(file.prefix(4))
            if text.contains("-- Incompatible with the previous release:") {
                #expect(operations.contains("**\(number)**"), "\(file) declares itself incompatible: docs/operations.md must name it under Upgrades")
                continue
            }
            let earlier = try files.filter { $0 < file }.map { try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8) }
                .joined(separator: "\n")
            let code = Self.withoutRecreatedFunctions(Self.withoutComments(text), earlier: Self.withoutComments(earlier))
            for rule in Self.incompatible {
                let found = try Regex(rule.pattern).ignoresCase().firstMatch(in: code)
                #expect(found == nil, "\(file) \(rule.why): \(found.map { String(code[$0.range]) } ?? "")")
            }
        }
    }

    /// The stored function files are applied after the migrations on every upgrade, while the
    /// previous release may still run: they follow the same rule. A change that must drop a
    /// function or touch a table is a migration, and a new signature a new name.
    @Test func everyStoredFunctionFileIsCompatibleWithThePreviousRelease() throws {
        let files = try StoredFunctionFile.bundled()
        #expect(!files.isEmpty)
        for file in files {
            let code = Self.withoutComments(file.sql)
            for rule in Self.incompatible {
                let found = try Regex(rule.pattern).ignoresCase().firstMatch(in: code)
                #expect(found == nil, "\(file.fileName) \(rule.why): \(found.map { String(code[$0.range]) } ?? "")")
            }
        }
    }

    /// The check itself catches what it is for.
    @Test func theCheckFindsAnIncompatibleStatement() throws {
        let samples = [
            "ALTER TABLE devices DROP COLUMN name;", "ALTER TABLE apps RENAME COLUMN name TO title;",
            "ALTER TABLE apps ADD COLUMN plan text NOT NULL;", "DROP FUNCTION ready_apps(bigint);",
            "ALTER TABLE devices ALTER COLUMN token TYPE bytea;",
        ]
        for sample in samples {
            let caught = try Self.incompatible.contains { try Regex($0.pattern).ignoresCase().firstMatch(in: sample) != nil }
            #expect(caught, "\(sample)")
        }
        func caught(_ sql: String, earlier: String = "") throws -> Bool {
            try Self.incompatible.contains { try Regex($0.pattern).ignoresCase().firstMatch(in: Self.withoutRecreatedFunctions(sql, earlier: earlier)) != nil }
        }
        let before = "CREATE FUNCTION claim(batch_size integer, lease double precision) RETURNS TABLE (id bigint, token text) LANGUAGE sql AS $$ $$;"
        let drop = "DROP FUNCTION claim(integer, double precision);\n"
        // The same arguments and more columns: compatible.
        #expect(
            try !caught(
                drop + "CREATE FUNCTION claim(n integer, l double precision) RETURNS TABLE (id bigint, token text, badge int) LANGUAGE sql", earlier: before))
        // Another function, other arguments, or a column fewer: caught.
        #expect(try caught("DROP FUNCTION ready_apps(bigint);\nCREATE FUNCTION claim(n integer) RETURNS int"))
        #expect(try caught(drop + "CREATE FUNCTION claim(n integer) RETURNS TABLE (id bigint, token text) LANGUAGE sql", earlier: before))
        #expect(try caught(drop + "CREATE FUNCTION claim(n integer, l double precision) RETURNS TABLE (id bigint) LANGUAGE sql", earlier: before))
        let compatible = "ALTER TABLE apps ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 3650);"
        #expect(try !Self.incompatible.contains { try Regex($0.pattern).ignoresCase().firstMatch(in: compatible) != nil })
        #expect(
            try !Self.incompatible.contains { try Regex($0.pattern).ignoresCase().firstMatch(in: "ALTER TABLE a ADD COLUMN b int NOT NULL DEFAULT 0;") != nil })
    }

    /// The SQL without `DROP FUNCTION f(…)` statements of functions the same file creates again with
    /// the same arguments and, where `earlier` (the migrations before it) defined the function,
    /// every column it returned: in its one transaction, that only adds to what the function
    /// answers, and a caller naming its columns reads it as before.
    static func withoutRecreatedFunctions(_ sql: String, earlier: String = "") -> String {
        var result = sql
        for match in sql.matches(of: #/(?i)DROP\s+FUNCTION\s+(\w+)\s*\(([^)]*)\)\s*;/#) {
            let name = String(match.output.1)
            guard let created = definition(of: name, in: sql, last: false),
                argumentTypes(created.parameters) == argumentTypes(String(match.output.2), named: false)
            else { continue }
            if let previous = definition(of: name, in: earlier, last: true) {
                guard Set(columnNames(previous.returns)).isSubset(of: columnNames(created.returns)) else { continue }
            }
            result = result.replacingOccurrences(of: String(match.output.0), with: "")
        }
        return result
    }

    /// A function's parameter list and `RETURNS TABLE (…)` column list, as written.
    static func definition(of name: String, in sql: String, last: Bool) -> (parameters: String, returns: String)? {
        let pattern =
            #"(?is)CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+"# + name + #"\s*\(([^)]*)\)\s*RETURNS\s+(?:TABLE\s*\((.*?)\)\s*(?:LANGUAGE|AS|SET)|(\w+))"#
        guard let regex = try? Regex(pattern) else { return nil }
        let matches = sql.matches(of: regex)
        guard let match = last ? matches.last : matches.first else { return nil }
        func text(_ index: Int) -> String { match.output[index].substring.map(String.init) ?? "" }
        return (text(1), text(2).isEmpty ? text(3) : text(2))
    }

    /// `batch_size integer, lease_seconds double precision` → `["integer", "double precision"]`;
    /// with `named: false`, the list is of types alone.
    static func argumentTypes(_ list: String, named: Bool = true) -> [String] {
        list.split(separator: ",").map { part in
            let words = part.split(whereSeparator: \.isWhitespace).map { $0.lowercased() }
            return (named ? words.dropFirst() : words[...]).joined(separator: " ")
        }
    }

    static func columnNames(_ list: String) -> [String] {
        list.split(separator: ",").compactMap { $0.split(whereSeparator: \.isWhitespace).first.map { $0.lowercased() } }
    }

    static func withoutComments(_ sql: String) -> String {
        sql.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in line.range(of: "--").map { String(line[..<$0.lowerBound]) } ?? String(line) }
            .joined(separator: "\n")
    }
}
