/// A boolean expression over a device's tags, as a notification request gives it:
/// `(username:alice || group:beta) && !lang:fr`. `!` binds tighter than `&&`, and `&&` tighter
/// than `||`; parentheses group. A tag operand holds when the device carries that tag.
///
/// Stored in the notification's targeting as `{"source": "<as sent>", "ast": <node>}`, so the
/// fan-out compiles the tree without parsing again and operators read what was sent.
public struct TagExpression: Sendable, Equatable {
    public indirect enum Node: Sendable, Equatable {
        case tag(String)
        case not(Node)
        /// Every operand holds (`&&`); two or more.
        case and([Node])
        /// Some operand holds (`||`); two or more.
        case or([Node])
    }

    public let source: String
    public let root: Node

    /// Longest expression accepted, in characters.
    public static let maxLength = 1_024
    /// Most tag operands (counting repeats).
    public static let maxTags = 50
    /// Deepest nesting: each `(` and each `!` opens a level.
    public static let maxDepth = 16

    public init(source: String, root: Node) {
        self.source = source
        self.root = root
    }

    /// Parses `source`; errors say where and what was expected.
    public static func parse(_ source: String) throws(TagExpressionError) -> TagExpression {
        TagExpression(source: source, root: try TagExpressionParser.parse(source))
    }
}

extension TagExpression.Node {
    /// The tag operands, left to right, repeats included.
    public var tags: [String] {
        switch self {
        case .tag(let tag): [tag]
        case .not(let operand): operand.tags
        case .and(let operands), .or(let operands): operands.flatMap(\.tags)
        }
    }
}

extension TagExpression: Codable {
    enum CodingKeys: String, CodingKey {
        case source
        case ast
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(source: try container.decode(String.self, forKey: .source), root: try container.decode(Node.self, forKey: .ast))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(source, forKey: .source)
        try container.encode(root, forKey: .ast)
    }
}

/// A node is an object with one key: `{"tag": "beta"}`, `{"not": node}`, `{"and": [nodes]}`, `{"or": [nodes]}`.
extension TagExpression.Node: Codable {
    enum CodingKeys: String, CodingKey {
        case tag
        case not
        case and
        case or
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let tag = try container.decodeIfPresent(String.self, forKey: .tag) {
            self = .tag(tag)
        } else if let operand = try container.decodeIfPresent(Self.self, forKey: .not) {
            self = .not(operand)
        } else if let operands = try container.decodeIfPresent([Self].self, forKey: .and), operands.count >= 2 {
            self = .and(operands)
        } else if let operands = try container.decodeIfPresent([Self].self, forKey: .or), operands.count >= 2 {
            self = .or(operands)
        } else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: container.codingPath,
                    debugDescription: "A tag expression node is {\"tag\": …}, {\"not\": …}, or {\"and\"|\"or\": [two or more nodes]}."
                ))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .tag(let tag): try container.encode(tag, forKey: .tag)
        case .not(let operand): try container.encode(operand, forKey: .not)
        case .and(let operands): try container.encode(operands, forKey: .and)
        case .or(let operands): try container.encode(operands, forKey: .or)
        }
    }
}
