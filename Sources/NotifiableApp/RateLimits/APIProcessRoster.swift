import Foundation
import Logging
import NotifiableStore
import ServiceLifecycle
import Synchronization

/// Knows how many API processes answer now, from their beats in the database, so that each keeps
/// `1/N` of every rate limit. Until its first beat, and while the database does not answer, it
/// keeps the last count it had (1 at the start).
final class APIProcessRoster: Service, Sendable {
    let id = UUID()
    private let store: APIProcessStore
    private let interval: Duration
    private let logger: Logger
    private let live = Atomic<Int>(1)
    /// Waits for the migrations that make its table.
    private let beforeStart: @Sendable () async throws -> Void

    init(store: APIProcessStore, interval: Duration, logger: Logger, beforeStart: @escaping @Sendable () async throws -> Void) {
        self.store = store
        self.interval = interval
        self.logger = logger
        self.beforeStart = beforeStart
    }

    /// This process's share of each limit.
    var share: Double { 1 / Double(max(1, live.load(ordering: .relaxed))) }

    func run() async throws {
        try await beforeStart()
        let host = ProcessInfo.processInfo.hostName
        // A process counts as live for three beats, so one late beat does not halve a share.
        let liveWithin = interval * 3
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                let count = try await store.beat(id: id, host: host, liveWithin: liveWithin)
                if count != live.exchange(count, ordering: .relaxed) {
                    logger.info("API processes answering", metadata: ["processes": "\(count)"])
                }
            } catch {
                logger.warning("could not record this process's beat", metadata: ["error": "\(databaseErrorText(error))"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
        try? await store.leave(id: id)
    }
}
