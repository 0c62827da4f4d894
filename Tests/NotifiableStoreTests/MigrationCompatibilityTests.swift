import Foundation
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
            let code = Self.withoutRecreatedFunctions(Self.withoutComments(text))
            for rule in Self.incompatible {
                let found = try Regex(rule.pattern).ignoresCase().firstMatch(in: code)
                #expect(found == nil, "\(file) \(rule.why): \(found.map { String(code[$0.range]) } ?? "")")
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
        let recreated = "DROP FUNCTION claim_deliveries(integer, double precision);\nCREATE FUNCTION claim_deliveries(batch_size integer) RETURNS int"
        #expect(try !Self.incompatible.contains { try Regex($0.pattern).ignoresCase().firstMatch(in: Self.withoutRecreatedFunctions(recreated)) != nil })
        let dropped = "DROP FUNCTION ready_apps(bigint);\nCREATE FUNCTION claim_deliveries(batch_size integer) RETURNS int"
        #expect(try Self.incompatible.contains { try Regex($0.pattern).ignoresCase().firstMatch(in: Self.withoutRecreatedFunctions(dropped)) != nil })
        let compatible = "ALTER TABLE apps ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 3650);"
        #expect(try !Self.incompatible.contains { try Regex($0.pattern).ignoresCase().firstMatch(in: compatible) != nil })
        #expect(
            try !Self.incompatible.contains { try Regex($0.pattern).ignoresCase().firstMatch(in: "ALTER TABLE a ADD COLUMN b int NOT NULL DEFAULT 0;") != nil })
    }

    /// The SQL without `DROP FUNCTION f(…)` statements of functions the same file creates again:
    /// in its one transaction, that changes a function's result (say, another column) and leaves it
    /// callable as before.
    static func withoutRecreatedFunctions(_ sql: String) -> String {
        var result = sql
        for match in sql.matches(of: #/(?i)DROP\s+FUNCTION\s+(\w+)\s*\([^)]*\)\s*;/#) {
            let name = String(match.output.1)
            if sql.range(of: #"(?i)CREATE\s+(OR\s+REPLACE\s+)?FUNCTION\s+"# + name + #"\s*\("#, options: .regularExpression) != nil {
                result = result.replacingOccurrences(of: String(match.output.0), with: "")
            }
        }
        return result
    }

    static func withoutComments(_ sql: String) -> String {
        sql.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in line.range(of: "--").map { String(line[..<$0.lowerBound]) } ?? String(line) }
            .joined(separator: "\n")
    }
}
