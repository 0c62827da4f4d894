import NotifiableCore

/// Writes JSON text by hand, so that answers keep the member order the real services use.
extension JSONText {
    /// An object of already-written members, in the order given.
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { quoted($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }
}
