/// The database answered in a way the store did not expect: a bug, never a user's mistake.
public struct StoreError: Error, CustomStringConvertible {
    public let description: String
}
