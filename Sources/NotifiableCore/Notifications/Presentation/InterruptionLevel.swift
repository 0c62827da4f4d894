/// How an iOS notification may interrupt the person (`aps.interruption-level`, iOS 15+): a Focus
/// lets `time-sensitive` through unless the person said otherwise, and `critical` sounds even when
/// the phone is muted (with Apple's critical-alerts entitlement). docs/compatibility.md §12.
public enum InterruptionLevel: String, Sendable, Codable, CaseIterable {
    case passive
    case active
    case timeSensitive = "time-sensitive"
    case critical

    /// Whether it must reach the device at once: Android gets FCM's high priority and, drawn by
    /// Android, the highest notification priority.
    public var isUrgent: Bool { self == .timeSensitive || self == .critical }
}
