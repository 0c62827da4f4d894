/// One token of a tag expression and the position (from 1) of its first character.
struct TagExpressionToken: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case tag(String)
        case and
        case or
        case not
        case open
        case close
        case end
    }

    let kind: Kind
    let position: Int

    /// The token as messages quote it.
    var shown: String {
        switch kind {
        case .tag(let tag): DeviceTags.quoted(tag)
        case .and: "'&&'"
        case .or: "'||'"
        case .not: "'!'"
        case .open: "'('"
        case .close: "')'"
        case .end: "the end"
        }
    }
}

/// Splits a tag expression into tokens, one at a time, so that the parser reports the first
/// fault in reading order. Whitespace separates tokens and is otherwise ignored; any character
/// that is neither a tag's, an operator's, a parenthesis nor whitespace is refused on the spot,
/// so quotes, semicolons and the like never get past the grammar.
struct TagExpressionTokenizer {
    private let scalars: [Unicode.Scalar]
    private var index = 0

    init(_ source: String) {
        scalars = Array(source.unicodeScalars)
    }

    mutating func next() throws(TagExpressionError) -> TagExpressionToken {
        while index < scalars.count, [" ", "\t", "\n", "\r"].contains(scalars[index]) { index += 1 }
        let start = index
        let position = start + 1
        guard index < scalars.count else { return TagExpressionToken(kind: .end, position: position) }
        let scalar = scalars[index]
        index += 1
        switch scalar {
        case "(": return TagExpressionToken(kind: .open, position: position)
        case ")": return TagExpressionToken(kind: .close, position: position)
        case "!": return TagExpressionToken(kind: .not, position: position)
        case "&", "|":
            guard index < scalars.count, scalars[index] == scalar else {
                throw TagExpressionError(position: position, reason: "'\(scalar)' is not an operator; write '\(scalar)\(scalar)'")
            }
            index += 1
            return TagExpressionToken(kind: scalar == "&" ? .and : .or, position: position)
        default:
            guard scalar.isASCII, DeviceTags.isTagByte(UInt8(scalar.value)) else {
                throw TagExpressionError(
                    position: position,
                    reason: "\(Self.describe(scalar)) cannot appear in a tag expression; "
                        + "tags are letters, digits and _ @ # . : -, joined by &&, || and !, grouped with ( )")
            }
            while index < scalars.count, scalars[index].isASCII, DeviceTags.isTagByte(UInt8(scalars[index].value)) { index += 1 }
            let length = index - start
            guard length <= DeviceTags.maxLength else {
                throw TagExpressionError(
                    position: position, reason: "this tag is \(length) characters; tags are at most \(DeviceTags.maxLength)"
                )
            }
            var tag = String.UnicodeScalarView()
            tag.append(contentsOf: scalars[start..<index])
            return TagExpressionToken(kind: .tag(String(tag)), position: position)
        }
    }

    /// A character as a message names it: quoted when visible, by code point otherwise.
    private static func describe(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        if scalar.properties.isWhitespace || scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format {
            return code
        }
        let quote: Character = scalar == "'" ? "\"" : "'"
        return "\(quote)\(scalar)\(quote) (\(code))"
    }
}
