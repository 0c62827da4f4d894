import Foundation
import Logging
import NotifiableStore
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Whether this process can reach its database, watched over one connection of its own outside
/// the pool, so that a busy pool never looks like an absent database. While the database is
/// away, requests that need it are answered 503 with Retry-After at once
/// (`DatabaseAvailabilityMiddleware`) instead of queueing for a pooled connection that the pool
/// would keep failing to open for up to a minute. It is available until a probe says otherwise.
public final class DatabaseAvailability: Service, Sendable {
    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private let available = Atomic<Bool>(true)
    /// How often the open probe connection is asked `SELECT 1`, and how soon a failed probe
    /// tries again: together they bound how late an outage or a recovery is noticed.
    let probeInterval: Duration
    let probeTimeout: Duration

    public init(databaseURL: String, logger: Logger, probeInterval: Duration = .milliseconds(250), probeTimeout: Duration = .seconds(2)) throws {
        var configuration = try DatabaseURL.connectionConfiguration(from: databaseURL)
        configuration.options.connectTimeout = .seconds(2)
        self.configuration = configuration
        self.logger = logger
        self.probeInterval = probeInterval
        self.probeTimeout = probeTimeout
    }

    public var isAvailable: Bool { available.load(ordering: .relaxed) }

    public func run() async throws {
        try await cancelWhenGracefulShutdown { [self] in
            var attempt = 0
            var downSince: ContinuousClock.Instant?
            while !Task.isCancelled {
                attempt += 1
                do {
                    let connection = try await PostgresConnection.connect(configuration: configuration, id: attempt, logger: logger)
                    do {
                        while true {
                            try await probe(connection)
                            if let since = downSince {
                                available.store(true, ordering: .relaxed)
                                logger.notice("database reachable again", metadata: ["unreachable_for": "\(ContinuousClock.now - since)"])
                                downSince = nil
                            }
                            try await Task.sleep(for: probeInterval)
                        }
                    } catch {
                        try? await connection.close()
                        throw error
                    }
                } catch is CancellationError {
                    return
                } catch {
                    if Task.isCancelled { return }
                    if downSince == nil {
                        downSince = .now
                        available.store(false, ordering: .relaxed)
                        logger.warning("database unreachable: answering 503 until it is back", metadata: ["error": "\(databaseErrorText(error))"])
                    }
                    try? await Task.sleep(for: probeInterval)
                }
            }
        }
    }

    private func probe(_ connection: PostgresConnection) async throws {
        let timeout = probeTimeout
        let logger = logger
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { for try await _ in try await connection.query("SELECT 1", logger: logger) {} }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw DeadlineExceeded()
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }
}
