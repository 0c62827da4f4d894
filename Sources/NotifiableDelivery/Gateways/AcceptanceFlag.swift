import Synchronization

/// Whether a gateway has accepted any push over an app's current settings, shared by the
/// connections made from them: until it has, a refusal may mean the settings are wrong.
final class AcceptanceFlag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
