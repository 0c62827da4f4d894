import NotifiableCore

/// The SQL condition on `devices AS d` that a tag expression selects, node for node: a tag is
/// `d.tags @> ARRAY[$n::text]` (the GIN index on (app_id, tags) answers it), and `!`, `&&`, `||`
/// become NOT, AND, OR. Every tag is a bind parameter; only those keywords and parentheses are
/// written into the text. `tags` is never NULL, so NOT never meets a NULL.
enum TagExpressionSQL {
    static func condition(for node: TagExpression.Node, builder: inout SQLBuilder) -> String {
        switch node {
        case .tag(let tag):
            return "d.tags @> ARRAY[\(builder.bind(tag))::text]"
        case .not(let operand):
            return "NOT (" + condition(for: operand, builder: &builder) + ")"
        case .and(let operands):
            return "(" + operands.map { condition(for: $0, builder: &builder) }.joined(separator: " AND ") + ")"
        case .or(let operands):
            return "(" + operands.map { condition(for: $0, builder: &builder) }.joined(separator: " OR ") + ")"
        }
    }
}
