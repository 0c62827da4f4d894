import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Whether this process can reach its database, watched over one connection of its own outside
/// the pool, so that a busy pool never looks like an absent database. While the database is
/// away, requests that need it are answered 503 with Retry-After at once
/// (`DatabaseAvailabilityMiddleware`) instead of queueing for a pooled connection that the pool
/// would keep failing to open for up to a minute. It is available until a probe says otherwise.
///
/// It also answers for requests stranded by an outage (`DatabaseOutageResponder`): a query written
/// to a pooled connection at the moment the server closes it is never answered (postgres-nio 1.33
/// fails the write but not the query), so a request caught by a database crash would wait
/// forever. A request begun before an outage and still running `strandedAfter` once the database
/// is back (or `longOutage` into an outage that lasts) is answered 503 and its task left behind.
public final class DatabaseAvailability: Service, Sendable {
    /// Where the probe connects: the server the pool uses now (it moves when a standby is promoted).
    private let database: Database
    private let logger: Logger
    private let available = Atomic<Bool>(true)
    /// Outages seen so far; a request remembers the count it began with.
    private let outages = Atomic<Int>(0)
    private let inFlight = Mutex(InFlight())
    /// How often the open probe connection is asked `SELECT 1`, and how soon a failed probe
    /// tries again: together they bound how late an outage or a recovery is noticed.
    let probeInterval: Duration
    let probeTimeout: Duration
    let strandedAfter: Duration
    let longOutage: Duration
    /// How long a request may run before it is answered 503 (`ServerConfiguration.requestDeadline`).
    let requestDeadline: Duration

    public init(
        database: Database, logger: Logger, probeInterval: Duration = .milliseconds(250), probeTimeout: Duration = .seconds(2),
        strandedAfter: Duration = .seconds(3), longOutage: Duration = .seconds(10), requestDeadline: Duration = .seconds(15)
    ) {
        self.database = database
        self.logger = logger
        self.probeInterval = probeInterval
        self.probeTimeout = probeTimeout
        self.strandedAfter = strandedAfter
        self.longOutage = longOutage
        self.requestDeadline = requestDeadline
    }

    public var isAvailable: Bool { available.load(ordering: .relaxed) }

    public func run() async throws {
        // Requests past their deadline are answered while the HTTP server drains (it stops first).
        let deadlines = Task { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                expireRequests(at: .now)
            }
        }
        defer { deadlines.cancel() }
        try await cancelWhenGracefulShutdown { [self] in
            var attempt = 0
            var downSince: ContinuousClock.Instant?
            var backSince: ContinuousClock.Instant?
            var rescued = true
            var failures = 0
            while !Task.isCancelled {
                attempt += 1
                do {
                    let connection: PostgresConnection
                    // The pool may move to another server (a standby promoted): then so does the probe.
                    let movesAtConnect = database.moves
                    do {
                        var configuration = database.currentServer.connection
                        configuration.options.connectTimeout = .seconds(2)
                        connection = try await withDeadline(.seconds(probeSeconds)) { [configuration, logger, attempt] in
                            try await PostgresConnection.connect(configuration: configuration, id: attempt, logger: logger)
                        } late: { connection in
                            Task { try? await connection.close() }
                        }
                    } catch is DeadlineExceeded {
                        throw ProbeCannotConnect()
                    }
                    do {
                        while true {
                            guard database.moves == movesAtConnect else { throw PoolMoved() }
                            try await probe(connection)
                            failures = 0
                            if let since = downSince {
                                available.store(true, ordering: .relaxed)
                                logger.notice("database reachable again", metadata: ["unreachable_for": "\(ContinuousClock.now - since)"])
                                downSince = nil
                                backSince = .now
                            }
                            if !rescued, let back = backSince, ContinuousClock.now - back >= strandedAfter {
                                strandRequests(begunBefore: outages.load(ordering: .relaxed))
                                rescued = true
                                backSince = nil
                            }
                            try await Task.sleep(for: probeInterval)
                        }
                    } catch {
                        Task { try? await connection.close() }
                        throw error
                    }
                } catch is CancellationError {
                    return
                } catch is PoolMoved {
                    // Requests still running on the old pool when it moved may be stranded on a
                    // connection it closed: counted as an outage that ended now, they are answered
                    // 503 if still running `strandedAfter` from here.
                    outages.add(1, ordering: .relaxed)
                    rescued = false
                    backSince = .now
                    continue
                } catch {
                    if Task.isCancelled { return }
                    if Self.saysDatabaseIsAway(error) { failures += 1 }
                    if downSince == nil, failures >= 2 {
                        downSince = .now
                        backSince = nil
                        rescued = false
                        outages.add(1, ordering: .relaxed)
                        available.store(false, ordering: .relaxed)
                        logger.warning("database unreachable: answering 503 until it is back", metadata: ["error": "\(databaseErrorText(error))"])
                    } else if !rescued, let since = downSince, ContinuousClock.now - since >= longOutage {
                        strandRequests(begunBefore: outages.load(ordering: .relaxed))
                        rescued = true
                    }
                    try? await Task.sleep(for: probeInterval)
                }
            }
        }
    }

    /// Whether a failed probe says the database is away. Two in a row are an outage: one
    /// alone may be the probe's own connection dropped. A slow connection or answer is not (a
    /// loaded machine is not an absent database), nor is a server out of connection slots (the
    /// pool still holds its connections).
    static func saysDatabaseIsAway(_ error: any Error) -> Bool {
        if error is ProbeConnectionClosed { return true }
        if error is ProbeCannotConnect { return false }
        if let psql = error as? PSQLError, psql.serverInfo?[.sqlState] == "53300" { return false }
        return isDatabaseUnavailable(error)
    }

    private var probeSeconds: Double {
        probeTimeout.seconds
    }

    private func probe(_ connection: PostgresConnection) async throws {
        // A query written to a closed connection would never be answered; do not write it.
        guard !connection.isClosed else { throw ProbeConnectionClosed() }
        let logger = logger
        try await withDeadline(.seconds(probeSeconds)) {
            for try await _ in try await connection.query("SELECT 1", logger: logger) {}
        }
    }

    private struct ProbeConnectionClosed: Error {}
    private struct PoolMoved: Error {}
    /// No connection within the probe's timeout. Not an outage by itself: on a loaded machine
    /// (the test suite on two cores) opening a connection takes longer than that while the
    /// pool works on; a host that is gone is left to the pool's own timeouts.
    private struct ProbeCannotConnect: Error {}

    // MARK: Requests stranded by an outage

    private struct InFlight {
        var nextID: UInt64 = 0
        var requests: [UInt64: Pending] = [:]
    }

    private struct Pending: Sendable {
        let outagesAtStart: Int
        let due: ContinuousClock.Instant
        let strand: @Sendable () -> Void
        let expire: @Sendable () -> Void
    }

    /// Runs `work` in a task of its own and answers its result; or `stranded()` when an outage
    /// that began after it started leaves it running (see the type's description); or
    /// `pastDeadline()` when it is still running `requestDeadline` after it began (checked with
    /// the probe, four times a second). Either way the task is left behind: what it awaits may
    /// never answer.
    func guarding<T: Sendable>(
        _ work: @escaping @Sendable () async throws -> T, stranded: @escaping @Sendable () -> T,
        pastDeadline: @escaping @Sendable () -> T
    ) async throws -> T {
        let answer = OneAnswer<T>()
        let outagesAtStart = outages.load(ordering: .relaxed)
        let due = ContinuousClock.now + requestDeadline
        return try await withCheckedThrowingContinuation { continuation in
            answer.install(continuation)
            let id = inFlight.withLock { state -> UInt64 in
                state.nextID += 1
                state.requests[state.nextID] = Pending(
                    outagesAtStart: outagesAtStart, due: due,
                    strand: { answer.preempt(.success(stranded())) }, expire: { answer.preempt(.success(pastDeadline())) })
                return state.nextID
            }
            let task = Task { [self] in
                let result: Result<T, any Error>
                do {
                    result = .success(try await work())
                } catch {
                    result = .failure(error)
                }
                _ = inFlight.withLock { $0.requests.removeValue(forKey: id) }
                answer.give(result)
            }
            answer.onTimeout { task.cancel() }
        }
    }

    /// Answers the requests past their deadline.
    private func expireRequests(at now: ContinuousClock.Instant) {
        let expired = inFlight.withLock { state -> [Pending] in
            let ids = state.requests.filter { $0.value.due <= now }.map(\.key)
            return ids.compactMap { state.requests.removeValue(forKey: $0) }
        }
        for pending in expired { pending.expire() }
    }

    private func strandRequests(begunBefore outage: Int) {
        let stranded = inFlight.withLock { state -> [Pending] in
            let ids = state.requests.filter { $0.value.outagesAtStart < outage }.map(\.key)
            return ids.compactMap { state.requests.removeValue(forKey: $0) }
        }
        guard !stranded.isEmpty else { return }
        logger.warning("answering 503 to requests stranded by the database outage", metadata: ["requests": "\(stranded.count)"])
        for pending in stranded { pending.strand() }
    }
}
