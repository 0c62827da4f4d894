/// The sets of delivery states that statements name, spelled once. They go into a statement as its
/// text, not as a bound value: the partial indexes of `deliveries` (`deliveries_waiting_idx`) serve
/// only a predicate the planner can read.
enum DeliveryStateList {
    /// Waiting for a gateway: not claimed yet, or backing off after a transient failure.
    static let waiting = "('available', 'retrying')"
    /// Settled for good: nothing more happens to them but a device's report or retention.
    static let settled = "('sent', 'failed', 'dead', 'cancelled')"
}
