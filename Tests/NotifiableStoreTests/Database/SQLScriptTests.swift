import Foundation
import NotifiableStore
import NotifiableTesting
import Testing

@Suite struct SQLScriptTests {
    @Test func splitsOnSemicolons() {
        #expect(SQLScript.statements(in: "SELECT 1; SELECT 2;") == ["SELECT 1", "SELECT 2"])
    }

    @Test func keepsFinalStatementWithoutSemicolon() {
        #expect(SQLScript.statements(in: "SELECT 1;\nSELECT 2\n") == ["SELECT 1", "SELECT 2"])
    }

    @Test func trimsWhitespace() {
        #expect(SQLScript.statements(in: "  \n\tSELECT 1  \n;\n\n") == ["SELECT 1"])
    }

    @Test func dropsEmptyStatements() {
        #expect(SQLScript.statements(in: ";;SELECT 1;;  ;\n;") == ["SELECT 1"])
        #expect(SQLScript.statements(in: "") == [])
        #expect(SQLScript.statements(in: "   \n ") == [])
    }

    @Test func dropsCommentOnlyStatements() {
        let script = "-- just a comment\n;\n/* block */;\n-- trailing comment"
        #expect(SQLScript.statements(in: script) == [])
    }

    @Test func semicolonInSingleQuotedString() {
        #expect(SQLScript.statements(in: "SELECT 'a;b'; SELECT 2") == ["SELECT 'a;b'", "SELECT 2"])
    }

    @Test func doubledSingleQuoteDoesNotEndString() {
        let script = "INSERT INTO t VALUES ('it''s; fine'); SELECT 2"
        #expect(SQLScript.statements(in: script) == ["INSERT INTO t VALUES ('it''s; fine')", "SELECT 2"])
    }

    @Test func semicolonInDoubleQuotedIdentifier() {
        let script = #"CREATE TABLE "odd;name" ("a;""b" int); SELECT 2"#
        #expect(SQLScript.statements(in: script) == [#"CREATE TABLE "odd;name" ("a;""b" int)"#, "SELECT 2"])
    }

    @Test func semicolonInLineComment() {
        let script = "SELECT 1 -- not; the end\n+ 1; SELECT 2"
        #expect(SQLScript.statements(in: script) == ["SELECT 1 -- not; the end\n+ 1", "SELECT 2"])
    }

    @Test func semicolonInBlockComment() {
        #expect(SQLScript.statements(in: "SELECT /* a; b */ 1; SELECT 2") == ["SELECT /* a; b */ 1", "SELECT 2"])
    }

    @Test func nestedBlockComments() {
        let script = "SELECT /* outer /* inner; */ still comment; */ 1; SELECT 2"
        #expect(
            SQLScript.statements(in: script) == ["SELECT /* outer /* inner; */ still comment; */ 1", "SELECT 2"]
        )
    }

    @Test func dollarQuotedFunctionBody() {
        let function = """
            CREATE FUNCTION touch() RETURNS trigger AS $$
            BEGIN
                NEW.updated_at := now();
                RETURN NEW;
            END
            $$ LANGUAGE plpgsql
            """
        let script = function + ";\nSELECT 2;"
        #expect(SQLScript.statements(in: script) == [function, "SELECT 2"])
    }

    @Test func taggedDollarQuote() {
        let body = "DO $body$ BEGIN PERFORM 1; PERFORM $$x;y$$; END $body$"
        #expect(SQLScript.statements(in: body + "; SELECT 2") == [body, "SELECT 2"])
    }

    @Test func dollarQuoteTagWithDigitsAndUnderscore() {
        let body = "SELECT $fn_1$ a; b $fn_1$"
        #expect(SQLScript.statements(in: body + ";SELECT 2") == [body, "SELECT 2"])
    }

    @Test func positionalParameterIsNotADollarQuote() {
        let script = "SELECT $1; SELECT $2, $3; SELECT 4"
        #expect(SQLScript.statements(in: script) == ["SELECT $1", "SELECT $2, $3", "SELECT 4"])
    }

    @Test func quotesInsideCommentsAreIgnored() {
        let script = "-- it's a comment\nSELECT 1; /* \"unbalanced */ SELECT 2"
        #expect(SQLScript.statements(in: script) == ["-- it's a comment\nSELECT 1", "/* \"unbalanced */ SELECT 2"])
    }

    @Test func leadingCommentStaysWithItsStatement() {
        #expect(SQLScript.statements(in: "-- make t\nCREATE TABLE t (a int);") == ["-- make t\nCREATE TABLE t (a int)"])
    }

    @Test func migrationFileSplitsIntoItsStatements() throws {
        let file = TestDatabase.migrationsDirectory.appendingPathComponent("0001_apps_and_devices.sql")
        let script = try String(contentsOf: file, encoding: .utf8)
        let statements = SQLScript.statements(in: script)
        // Every statement of the file starts a line with CREATE or ALTER; count those lines.
        let expected = script.split(separator: "\n").filter { $0.hasPrefix("CREATE ") || $0.hasPrefix("ALTER ") }.count
        #expect(expected >= 6)
        #expect(statements.count == expected)
        #expect(statements.first?.contains("CREATE TABLE apps (") == true)
        for statement in statements {
            #expect(!statement.hasSuffix(";"))
        }
    }
}

@Suite struct SQLScriptIdentifierDollarTests {
    @Test func aDollarInsideAnIdentifierOpensNoQuote() {
        let statements = SQLScript.statements(in: "SELECT a$b$ FROM t; SELECT 2;")
        #expect(statements == ["SELECT a$b$ FROM t", "SELECT 2"])
    }
}
