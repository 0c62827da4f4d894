import Dispatch
import NIOCore
import NotifiableCore

/// Checks operators' passwords a few at a time, off the threads that answer requests. A check is
/// scrypt (about 0.1 s and 32 MiB), and Swift runs tasks on one thread per core: a burst of
/// sign-ins checked there would stall every request and the delivery workers of the process. So
/// at most `concurrent` checks run at once, on Dispatch's threads, `queued` more wait their turn,
/// and past that a sign-in is turned away at once (`Busy`) instead of waiting behind them.
final class PasswordChecks: Sendable {
    typealias Busy = Permits.Full

    private let permits: Permits
    private let queued: Int

    init(concurrent: Int = System.coreCount, queued: Int = 16) {
        permits = Permits(limit: concurrent)
        self.queued = queued
    }

    /// Whether `password` is the one `hash` was made from.
    func matches(_ password: String, _ hash: PasswordHash) async throws -> Bool {
        try await run { hash.matches(password) }
    }

    /// A new hash of `password`, made the same way: an owner adding operators may not stall sign-ins either.
    func hash(_ password: String) async throws -> PasswordHash {
        try await run { Result(catching: { try PasswordHash.make(password) }) }.get()
    }

    private func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws -> T {
        try await permits.withPermit(waitingBehind: queued) {
            await withCheckedContinuation { continuation in
                DispatchQueue.global(qos: .userInitiated).async { continuation.resume(returning: work()) }
            }
        }
    }
}
