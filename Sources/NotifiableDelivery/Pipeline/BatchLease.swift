import Synchronization

/// What a lane knows of its batch's lease: until when it surely holds it (counted from before the
/// claim or the last renewal was asked, so a slow answer only shortens it), and which deliveries a
/// renewal found it no longer holds (their lease ran out and they were rescued, perhaps claimed
/// by another worker). A send starts only while the lease is known to outlast it.
final class BatchLease: Sendable {
    private struct State {
        var heldUntil: ContinuousClock.Instant
        var lost: Set<Int64> = []
        var recording = false
    }
    private let state: Mutex<State>
    let lease: Duration

    init(askedAt: ContinuousClock.Instant, lease: Duration) {
        self.lease = lease
        state = Mutex(State(heldUntil: askedAt + lease))
    }

    /// Whether delivery `id` may be sent now by a send that can take up to `sendBudget`.
    func maySend(_ id: Int64, sendBudget: Duration, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { !$0.lost.contains(id) && now + sendBudget <= $0.heldUntil }
    }

    /// Every send is over and the outcomes are being recorded: a delivery a renewal no longer
    /// finds running (or finds locked) was most likely recorded, not lost.
    func startRecording() {
        state.withLock { $0.recording = true }
    }

    /// A renewal asked at `askedAt` extended the leases of `held` among `ids`; the others are lost
    /// (unless the batch is being recorded). Answers the ones newly lost and how much of the old
    /// lease was left when the renewal was asked (negative: it ran out first).
    func renewed(askedAt: ContinuousClock.Instant, held: Set<Int64>, of ids: [Int64]) -> (lost: [Int64], margin: Duration) {
        state.withLock { state in
            let margin = state.heldUntil - askedAt
            let newlyLost = state.recording ? [] : ids.filter { !held.contains($0) && !state.lost.contains($0) }
            state.lost.formUnion(newlyLost)
            state.heldUntil = askedAt + lease
            return (newlyLost, margin)
        }
    }
}
