/// What a request says about one optional field: leave it as it is, or set it (nil clears it).
public enum FieldUpdate<Value: Sendable & Equatable>: Sendable, Equatable {
    case unchanged
    case set(Value?)

    /// The value after applying this update to `current`.
    public func applied(to current: Value?) -> Value? {
        switch self {
        case .unchanged: current
        case .set(let value): value
        }
    }
}
