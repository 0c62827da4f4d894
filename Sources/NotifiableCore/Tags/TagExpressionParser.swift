/// A recursive-descent parser for tag expressions:
///
///     expression  := conjunction ( '||' conjunction )*
///     conjunction := unary ( '&&' unary )*
///     unary       := '!' unary | primary
///     primary     := TAG | '(' expression ')'
///
/// It stops at the first fault in reading order, naming its position and what was expected
/// there, and enforces the caps of `TagExpression` as it reads, so no input makes it work
/// harder than 1,024 characters' worth.
struct TagExpressionParser {
    typealias Node = TagExpression.Node

    private var tokenizer: TagExpressionTokenizer
    private var token: TagExpressionToken
    private var tagCount = 0
    private var depth = 0

    static func parse(_ source: String) throws(TagExpressionError) -> Node {
        let length = source.unicodeScalars.count
        guard length <= TagExpression.maxLength else {
            throw TagExpressionError(position: nil, reason: "it is \(length) characters; an expression is at most \(TagExpression.maxLength)")
        }
        var parser = try TagExpressionParser(source)
        guard parser.token.kind != .end else {
            throw TagExpressionError(position: nil, reason: "it is empty; give at least one tag, such as group:beta")
        }
        let root = try parser.expression(after: nil)
        switch parser.token.kind {
        case .end: return root
        case .close: throw TagExpressionError(position: parser.token.position, reason: "this ')' closes no '('")
        default: throw parser.missingOperator()
        }
    }

    private init(_ source: String) throws(TagExpressionError) {
        tokenizer = TagExpressionTokenizer(source)
        token = try tokenizer.next()
    }

    private mutating func advance() throws(TagExpressionError) {
        token = try tokenizer.next()
    }

    /// `previous` is the token before this operand (nil at the start), for messages.
    private mutating func expression(after previous: TagExpressionToken?) throws(TagExpressionError) -> Node {
        var operands = [try conjunction(after: previous)]
        while token.kind == .or {
            let or = token
            try advance()
            operands.append(try conjunction(after: or))
        }
        return operands.count == 1
            ? operands[0]
            : .or(
                operands.flatMap { node in
                    if case .or(let inner) = node { return inner }
                    return [node]
                })
    }

    private mutating func conjunction(after previous: TagExpressionToken?) throws(TagExpressionError) -> Node {
        var operands = [try unary(after: previous)]
        while token.kind == .and {
            let and = token
            try advance()
            operands.append(try unary(after: and))
        }
        return operands.count == 1
            ? operands[0]
            : .and(
                operands.flatMap { node in
                    if case .and(let inner) = node { return inner }
                    return [node]
                })
    }

    private mutating func unary(after previous: TagExpressionToken?) throws(TagExpressionError) -> Node {
        switch token.kind {
        case .tag(let tag):
            tagCount += 1
            guard tagCount <= TagExpression.maxTags else {
                throw TagExpressionError(
                    position: token.position, reason: "this is tag operand \(tagCount); an expression holds at most \(TagExpression.maxTags)"
                )
            }
            try advance()
            return .tag(tag)
        case .not:
            let not = token
            try enterLevel()
            try advance()
            let operand = try unary(after: not)
            depth -= 1
            return .not(operand)
        case .open:
            let open = token
            try enterLevel()
            try advance()
            let inner = try expression(after: open)
            switch token.kind {
            case .close: break
            case .end: throw TagExpressionError(position: token.position, reason: "expected ')' to close the '(' at position \(open.position)")
            default: throw missingOperator()
            }
            try advance()
            depth -= 1
            return inner
        case .and, .or, .close, .end:
            let context = previous.map { " after \($0.shown)" } ?? ""
            let found = token.kind == .end ? ", but the expression ends" : ", not \(token.shown)"
            throw TagExpressionError(position: token.position, reason: "expected a tag, '!' or '('\(context)\(found)")
        }
    }

    /// Each '(' and '!' opens a level; a level past the cap is refused where it opens.
    private mutating func enterLevel() throws(TagExpressionError) {
        depth += 1
        guard depth <= TagExpression.maxDepth else {
            throw TagExpressionError(
                position: token.position,
                reason: "this \(token.shown) nests \(depth) levels deep; at most \(TagExpression.maxDepth) ('(' and '!' each open one)"
            )
        }
    }

    /// An operand (a tag, '!' or '(') right after a complete operand.
    private func missingOperator() -> TagExpressionError {
        TagExpressionError(position: token.position, reason: "expected '&&' or '||' before \(token.shown)")
    }
}
