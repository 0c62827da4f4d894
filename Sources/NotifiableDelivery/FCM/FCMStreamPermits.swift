import Synchronization

/// Bounds the sends in flight to FCM at the streams the transport's connections carry (Google's front ends allow
/// 100 concurrent streams on a connection). The HTTP/2 client queues what its connections cannot carry with the
/// request's deadline running: a send that waited its whole deadline for a stream was never sent, yet it counted
/// as a failed attempt. Under a partial outage (requests FCM never answers hold their streams until the
/// deadline) that sent healthy deliveries to dead. Waiting here instead costs time, not attempts.
final class FCMStreamPermits: Sendable {
    static let streamsPerConnection = 100
    static let defaultLimit = streamsPerConnection * FCMHTTP2Transport.defaultConnectionsPerOrigin

    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(limit: Int = FCMStreamPermits.defaultLimit) {
        state = Mutex(State(available: max(1, limit)))
    }

    /// Runs `operation` once a permit is free, and frees it afterwards.
    func withPermit<Value: Sendable>(_ operation: () async -> Value) async -> Value {
        await acquire()
        let value = await operation()
        release()
        return value
    }

    private func acquire() async {
        let taken = state.withLock { state -> Bool in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
        guard !taken else { return }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                // A permit may have come free since the check above.
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            // A freed permit goes straight to the longest waiter.
            guard !state.waiters.isEmpty else {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
