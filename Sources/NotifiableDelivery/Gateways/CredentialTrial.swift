import Synchronization

/// Until a gateway has shown that it takes an app's credentials, one push at a time goes out with them: a revoked
/// key or a wrong team then costs one refused request, not a whole batch in flight (hundreds of requests, each
/// refused, and on a real gateway each counted against the sender).
///
/// The first sender to ``enter()`` becomes the probe and must ``settle(confirmed:)`` once its answer is known; the
/// others wait for it. A confirming answer (accepted, or refused for a reason that comes after authentication)
/// lets everyone through from then on; anything else (refused credentials, an outage, a lost connection) wakes the
/// waiters to look at the app's settings again, and the next of them probes.
final class CredentialTrial: Sendable {
    enum Entry: Equatable {
        /// The credentials are known to work: send.
        case trusted
        /// Send, then call ``settle(confirmed:)``.
        case probe
        /// A probe ended without confirming: look at the settings again (they may be refused now), then enter again.
        case lookAgain
    }

    private struct State {
        var confirmed = false
        var probing = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    var isConfirmed: Bool { state.withLock { $0.confirmed } }

    func enter() async -> Entry {
        enum Immediate { case trusted, probe, wait }
        let immediate: Immediate = state.withLock { state in
            if state.confirmed { return .trusted }
            if !state.probing {
                state.probing = true
                return .probe
            }
            return .wait
        }
        switch immediate {
        case .trusted: return .trusted
        case .probe: return .probe
        case .wait: break
        }
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                // The probe may have settled between the check above and now.
                guard state.probing, !state.confirmed else { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
        return isConfirmed ? .trusted : .lookAgain
    }

    /// Ends the probe; `confirmed` when the gateway's answer shows that it takes the credentials.
    func settle(confirmed: Bool) {
        let waiters = state.withLock { state in
            state.probing = false
            if confirmed { state.confirmed = true }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
