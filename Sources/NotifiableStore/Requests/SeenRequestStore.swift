import Foundation
import Logging
import NotifiableCore
import PostgresNIO
import Synchronization

/// The signed requests the API has accepted, while their signatures are still good: a request seen
/// again is a replay. Kept in PostgreSQL, so every API process refuses what any of them accepted.
///
/// Requests that arrive together are recorded together, as registrations are written
/// (`RegistrationBatcher`): a request waits only while every writer is busy, and one INSERT and
/// one commit serve all that waited.
public final class SeenRequestStore: Sendable {
    private let client: Database
    private let logger: Logger
    private let writers: Int
    private let batchLimit: Int
    private let statementDeadline: Duration
    private let state = Mutex(State())

    private struct Waiting {
        let digest: [UInt8]
        let until: Date
        let continuation: CheckedContinuation<Bool, any Error>
    }

    private struct State {
        var waiting: [Waiting] = []
        var writing = 0
        var lastPruned = ContinuousClock.now
    }

    public init(client: Database, logger: Logger, writers: Int = 2, batchLimit: Int = 500, statementDeadline: Duration = .seconds(10)) {
        self.client = client
        self.logger = logger
        self.writers = writers
        self.batchLimit = batchLimit
        self.statementDeadline = statementDeadline
    }

    /// Records a request's digest until `until`; false when it was recorded before (a replay).
    public func admit(_ digest: [UInt8], until: Date) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            let startsWriter = state.withLock { state in
                state.waiting.append(Waiting(digest: digest, until: until, continuation: continuation))
                guard state.writing < writers else { return false }
                state.writing += 1
                return true
            }
            if startsWriter { Task.detached { await self.write() } }
        }
    }

    /// Forgets a request whose answer asked the client to come back: its exact retry is welcome.
    public func forget(_ digest: [UInt8], logger: Logger) async {
        do {
            try await client.query("DELETE FROM seen_requests WHERE digest = \(ByteBuffer(bytes: digest))", logger: logger)
        } catch {
            logger.warning(
                "could not forget a request answered with a retry; its exact retry will be refused", metadata: ["error": "\(databaseErrorText(error))"])
        }
    }

    private func write() async {
        while let batch = nextBatch() {
            await commit(batch)
        }
        await pruneNowAndThen()
    }

    private func nextBatch() -> [Waiting]? {
        state.withLock { state in
            guard !state.waiting.isEmpty else {
                state.writing -= 1
                return nil
            }
            let batch = Array(state.waiting.prefix(batchLimit))
            state.waiting.removeFirst(batch.count)
            return batch
        }
    }

    private func commit(_ batch: [Waiting]) async {
        // The first of twins in one batch is the request; the second, a replay.
        var first: [[UInt8]: Int] = [:]
        for (index, waiting) in batch.enumerated() where first[waiting.digest] == nil { first[waiting.digest] = index }
        let unique = first.values.sorted().map { batch[$0] }
        do {
            let recorded = try await insert(unique)
            for (index, waiting) in batch.enumerated() {
                waiting.continuation.resume(returning: first[waiting.digest] == index && recorded.contains(waiting.digest))
            }
        } catch {
            for waiting in batch { waiting.continuation.resume(throwing: error) }
        }
    }

    /// The digests that were not there before.
    private func insert(_ batch: [Waiting]) async throws -> Set<[UInt8]> {
        let (client, logger) = (client, logger)
        let digests = batch.map { ByteBuffer(bytes: $0.digest) }
        let until = batch.map(\.until)
        do {
            return try await withDeadline(statementDeadline) {
                var recorded = Set<[UInt8]>()
                for try await digest in try await client.query(
                    """
                    INSERT INTO seen_requests (digest, until)
                    SELECT * FROM unnest(\(digests)::bytea[], \(until)::timestamptz[])
                    ON CONFLICT (digest) DO NOTHING
                    RETURNING digest
                    """,
                    logger: logger
                ).decode(ByteBuffer.self) {
                    recorded.insert(Array(digest.readableBytesView))
                }
                return recorded
            }
        } catch is DeadlineExceeded {
            throw DatabaseDidNotAnswer(after: statementDeadline)
        }
    }

    /// Forgets requests whose signatures have expired, at most every ten seconds per process: a
    /// quarter of an hour late, so an API host whose clock is behind the database's still finds them.
    private func pruneNowAndThen() async {
        let due = state.withLock { state in
            guard ContinuousClock.now - state.lastPruned > .seconds(10) else { return false }
            state.lastPruned = .now
            return true
        }
        guard due else { return }
        do {
            try await client.query("DELETE FROM seen_requests WHERE until < now() - interval '15 minutes'", logger: logger)
        } catch {
            logger.warning("could not forget expired request signatures; the next request tries again", metadata: ["error": "\(databaseErrorText(error))"])
        }
    }
}
