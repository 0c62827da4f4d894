import Foundation

/// Wakes idle loops early: they wait at most a poll interval, or until someone rings
/// (PostgreSQL NOTIFY says there is work, or the worker is shutting down).
actor Doorbell {
    private var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]

    func ring() {
        let ringing = waiters.values
        waiters = [:]
        for waiter in ringing { waiter.resume() }
    }

    func wait(atMost duration: Duration) async {
        let id = UUID()
        await withCheckedContinuation { continuation in
            waiters[id] = continuation
            Task {
                try? await Task.sleep(for: duration)
                self.timeOut(id)
            }
        }
    }

    private func timeOut(_ id: UUID) {
        waiters.removeValue(forKey: id)?.resume()
    }
}
