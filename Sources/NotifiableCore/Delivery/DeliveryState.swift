/// Where one delivery (one notification to one device) stands in the queue. The deliveries
/// table's CHECK constraint, the API's JSON and the dashboard use these raw values; a test holds
/// the constraint to this list.
///
///     available ──claim──▶ running ──▶ sent | failed | dead
///         ▲                   │
///         └──── retrying ◀────┘  (transient answer: backoff, Retry-After)
///     available | retrying ──▶ cancelled  (notification cancelled, device gone, superseded)
///     available | retrying ──▶ dead       (expired while waiting; lease ran out too often)
public enum DeliveryState: String, Sendable, Codable, CaseIterable {
    /// Ready to be claimed once its run time comes.
    case available
    /// Claimed by a worker whose lease has not run out.
    case running
    /// Waiting for another attempt after a transient failure.
    case retrying
    /// The gateway accepted it.
    case sent
    /// The gateway refused it for good (a bad payload, a dead token).
    case failed
    /// Given up: attempts exhausted, expired, or the app's gateway settings refused.
    case dead
    /// Not sent: its notification was cancelled, its device unregistered, or a newer sync signal superseded it.
    case cancelled

    /// Whether it still waits to be sent (claimable when its time comes).
    public var isWaiting: Bool { self == .available || self == .retrying }

    /// Whether nothing more happens to it (unless an operator re-queues a dead one).
    public var isFinal: Bool { self == .sent || self == .failed || self == .dead || self == .cancelled }

    /// The raw values, in the order listings and filters show them.
    public static var names: [String] { allCases.map(\.rawValue) }
}
