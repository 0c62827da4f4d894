/// The sound of a critical alert: APNs takes `aps.sound` as the dictionary
/// `{"critical": 1, "name": …, "volume": …}` for it, where any other alert has a sound's name.
public struct CriticalSound: Sendable, Equatable, Codable {
    /// A sound file in the app's bundle, or `default`.
    public var name: String
    /// From 0 (silent) to 1 (full volume).
    public var volume: Double

    public init(name: String = "default", volume: Double = 1) {
        self.name = name
        self.volume = volume
    }
}
