/// The master key that seals new secrets, and the earlier ones still able to open secrets
/// sealed before a rotation (`NOTIFIABLE_PREVIOUS_MASTER_KEYS`), until `notifiable keys rotate`
/// has re-sealed everything with the current key.
public struct MasterKeyring: Sendable {
    public let current: MasterKey
    public let previous: [MasterKey]

    public init(current: MasterKey, previous: [MasterKey] = []) {
        self.current = current
        self.previous = previous.filter { $0.id != current.id }
    }

    /// A secret sealed with the current key, and that key's id to store beside it.
    public struct Sealed: Sendable {
        public let bytes: [UInt8]
        public let keyID: String
    }

    public func seal(_ secret: String, boundTo context: String) throws -> Sealed {
        Sealed(bytes: try current.seal(secret, boundTo: context), keyID: current.id)
    }

    /// Opens a secret with the key whose id was stored beside it; a secret stored without an id
    /// (sealed before ids were recorded) is tried with every key.
    public func open(_ sealed: [UInt8], keyID: String?, boundTo context: String) throws -> String {
        let keys = [current] + previous
        if let keyID {
            guard let key = keys.first(where: { $0.id == keyID }) else { throw MasterKeyError.unknownKey(id: keyID) }
            return try key.open(sealed, boundTo: context)
        }
        for key in keys {
            if let secret = try? key.open(sealed, boundTo: context) { return secret }
        }
        throw MasterKeyError.cannotOpen
    }
}
