/// Why a tag expression was refused, and where: `position` counts characters from 1 (the end of
/// the text is its length + 1); nil for a fault of the whole text (empty, too long).
public struct TagExpressionError: Error, Sendable, Equatable {
    public let position: Int?
    public let reason: String

    public init(position: Int?, reason: String) {
        self.position = position
        self.reason = reason
    }

    /// The sentence clients read: "Invalid tag expression at position 14: expected …".
    public var message: String {
        if let position { return "Invalid tag expression at position \(position): \(reason)." }
        return "Invalid tag expression: \(reason)."
    }
}
