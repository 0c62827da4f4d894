import Foundation
import NotifiableCore
import Testing

private func parse(_ source: String) throws -> TagExpression.Node {
    try TagExpression.parse(source).root
}

private func failure(_ source: String) -> TagExpressionError? {
    do {
        _ = try TagExpression.parse(source)
        return nil
    } catch {
        return error
    }
}

private func tag(_ name: String) -> TagExpression.Node { .tag(name) }

@Suite struct TagExpressionTests {
    @Test(
        arguments: [
            ("beta", tag("beta")),
            ("  beta\t", tag("beta")),
            ("a && b", .and([tag("a"), tag("b")])),
            ("a||b", .or([tag("a"), tag("b")])),
            ("!a", .not(tag("a"))),
            ("!!a", .not(.not(tag("a")))),
            // ! binds tighter than &&, && tighter than ||.
            ("a || b && c", .or([tag("a"), .and([tag("b"), tag("c")])])),
            ("a && b || c", .or([.and([tag("a"), tag("b")]), tag("c")])),
            ("!a && b", .and([.not(tag("a")), tag("b")])),
            ("!(a && b)", .not(.and([tag("a"), tag("b")]))),
            ("(a || b) && c", .and([.or([tag("a"), tag("b")]), tag("c")])),
            ("a && (b && c) && d", .and([tag("a"), tag("b"), tag("c"), tag("d")])),
            ("((a))", tag("a")),
            (
                "(username:alice || group:beta) && !lang:fr",
                .and([.or([tag("username:alice"), tag("group:beta")]), .not(tag("lang:fr"))])
            ),
            ("user@example.com && #launch && v1.2-rc_3", .and([tag("user@example.com"), tag("#launch"), tag("v1.2-rc_3")])),
            // Words that mean something in SQL or elsewhere are tags like any other.
            ("OR || select && true", .or([tag("OR"), .and([tag("select"), tag("true")])])),
        ] as [(String, TagExpression.Node)])
    func parsesWithPrecedence(source: String, expected: TagExpression.Node) throws {
        #expect(try parse(source) == expected)
    }

    @Test(
        arguments: [
            // The brief's example: the operand missing after '&&'.
            ("group:beta && ", 15, "expected a tag, '!' or '(' after '&&', but the expression ends"),
            ("a && && b", 6, "expected a tag, '!' or '(' after '&&', not '&&'"),
            ("a || )", 6, "expected a tag, '!' or '(' after '||', not ')'"),
            ("!", 2, "expected a tag, '!' or '(' after '!', but the expression ends"),
            ("&& a", 1, "expected a tag, '!' or '(', not '&&'"),
            ("()", 2, "expected a tag, '!' or '(' after '(', not ')'"),
            ("(a || b", 8, "expected ')' to close the '(' at position 1"),
            ("(a (b))", 4, "expected '&&' or '||' before '('"),
            ("a b", 3, "expected '&&' or '||' before \"b\""),
            ("a !b", 3, "expected '&&' or '||' before '!'"),
            ("a)", 2, "this ')' closes no '('"),
            ("a & b", 3, "'&' is not an operator; write '&&'"),
            ("a | b", 3, "'|' is not an operator; write '||'"),
            (
                "a && lang=fr", 10,
                "'=' (U+003D) cannot appear in a tag expression; tags are letters, digits and _ @ # . : -, joined by &&, || and !, grouped with ( )"
            ),
            ("café", 4, "'é' (U+00E9) cannot appear in a tag expression; tags are letters, digits and _ @ # . : -, joined by &&, || and !, grouped with ( )"),
        ] as [(String, Int, String)])
    func malformedExpressionsSayWhereAndWhat(source: String, position: Int, reason: String) {
        let error = failure(source)
        #expect(error == TagExpressionError(position: position, reason: reason), "\(source)")
    }

    @Test func theMessageNamesThePosition() {
        #expect(failure("(a || b) && ")?.message == "Invalid tag expression at position 13: expected a tag, '!' or '(' after '&&', but the expression ends.")
        #expect(failure("")?.message == "Invalid tag expression: it is empty; give at least one tag, such as group:beta.")
        #expect(failure("  \n ")?.position == nil)
    }

    /// Quotes, semicolons and comment markers are refused by the grammar where they stand, so
    /// nothing of such an expression ever reaches SQL.
    @Test(
        arguments: [
            ("beta' OR '1'='1", 5, "\"'\" (U+0027)"),
            ("beta\" OR 1=1", 5, "'\"' (U+0022)"),
            ("beta; DROP TABLE devices", 5, "';' (U+003B)"),
            ("beta -- comment", nil, nil),
            ("beta /* x */", 6, "'/' (U+002F)"),
            ("a && $1", 6, "'$' (U+0024)"),
            ("a\u{0}b", 2, "U+0000"),
        ] as [(String, Int?, String?)])
    func injectionAttemptsAreRefusedWithAPosition(source: String, position: Int?, character: String?) {
        let error = failure(source)
        if let position, let character {
            #expect(error?.position == position, "\(source)")
            #expect(error?.reason.hasPrefix("\(character) cannot appear in a tag expression") == true, "\(String(describing: error))")
        } else {
            // "--" is a tag (tags may hold '-'), so this is two tags with no operator between.
            #expect(error == TagExpressionError(position: 6, reason: "expected '&&' or '||' before \"--\""))
        }
    }

    @Test func tagsThatLookLikeSQLAreLiterals() throws {
        for literal in ["select", "OR", "true", "null", "--", "1:1", "x:1-1", "#1"] {
            #expect(try parse(literal) == tag(literal))
        }
        // '=' is no tag character, so "x:1=1" is refused rather than read as a comparison.
        #expect(failure("x:1=1")?.position == 4)
    }

    @Test func lengthIsCapped() throws {
        let exact = String(repeating: " ", count: 1_020) + "beta"
        #expect(try parse(exact) == tag("beta"))
        let over = exact + " "
        #expect(failure(over) == TagExpressionError(position: nil, reason: "it is 1025 characters; an expression is at most 1024"))
    }

    @Test func tagOperandsAreCapped() throws {
        let fifty = (1...50).map { "t\($0)" }.joined(separator: " || ")
        #expect(try parse(fifty).tags.count == 50)
        let fiftyOne = fifty + " || t51"
        #expect(
            failure(fiftyOne)
                == TagExpressionError(
                    position: fifty.count + 5, reason: "this is tag operand 51; an expression holds at most 50"
                ))
        // Repeats count: the cap is on the work the database does, not on distinct tags.
        #expect(failure(Array(repeating: "a", count: 51).joined(separator: "&&"))?.position == 151)
    }

    @Test func nestingIsCapped() throws {
        let sixteen = String(repeating: "(", count: 16) + "a" + String(repeating: ")", count: 16)
        #expect(try parse(sixteen) == tag("a"))
        let seventeen = "(" + sixteen + ")"
        #expect(
            failure(seventeen)
                == TagExpressionError(
                    position: 17, reason: "this '(' nests 17 levels deep; at most 16 ('(' and '!' each open one)"
                ))
        #expect(try parse(String(repeating: "!", count: 16) + "a").tags == ["a"])
        #expect(failure(String(repeating: "!", count: 17) + "a")?.position == 17)
        #expect(failure(String(repeating: "!(", count: 8) + "!a" + String(repeating: ")", count: 8))?.position == 17)
    }

    @Test func aTagLongerThanADeviceMayCarryIsRefused() throws {
        let longest = String(repeating: "t", count: 120)
        #expect(try parse("a && " + longest) == .and([tag("a"), tag(longest)]))
        #expect(failure("a && " + longest + "t") == TagExpressionError(position: 6, reason: "this tag is 121 characters; tags are at most 120"))
    }

    @Test func storedFormRoundTrips() throws {
        let expression = try TagExpression.parse("(username:alice || group:beta) && !lang:fr")
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(expression)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains(#""ast":{"and":[{"or":[{"tag":"username:alice"},{"tag":"group:beta"}]},{"not":{"tag":"lang:fr"}}]}"#), "\(text)")
        #expect(try JSONDecoder().decode(TagExpression.self, from: data) == expression)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(TagExpression.Node.self, from: Data(#"{"and": [{"tag": "a"}]}"#.utf8))
        }
    }
}
