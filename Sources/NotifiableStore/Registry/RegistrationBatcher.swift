import Logging
import NotifiableCore
import PostgresNIO
import Synchronization

/// Registrations that arrive together are written together. A registration waits only while
/// every writer is busy; a writer takes all that wait (up to a batch) and upserts them in one
/// statement. Alone, a registration goes at once, as one row; under load, one statement,
/// its triggers and its commit serve dozens, which is most of what a registration costs
/// PostgreSQL. Each caller still gets its own device, and its answer only after the commit.
///
/// A batch PostgreSQL refuses is written again one registration at a time, so one bad row
/// fails alone, with its own error.
final class RegistrationBatcher: Sendable {
    private let client: Database
    private let logger: Logger
    private let writers: Int
    private let batchLimit: Int
    /// A query stranded on a connection that closed under it never answers (see `withDeadline`);
    /// the writer gives up on it rather than stop writing, and its callers are told to come back.
    private let statementDeadline: Duration
    private let state = Mutex(State())

    private struct Waiting {
        let registration: Registration
        let continuation: CheckedContinuation<Device, any Error>
    }

    private struct State {
        var waiting: [Waiting] = []
        var writing = 0
        var statements = 0
    }

    /// Registrations waiting for a writer.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Upsert statements run so far, each of one or more rows.
    var statementsRun: Int { state.withLock { $0.statements } }

    init(client: Database, logger: Logger, writers: Int = 4, batchLimit: Int = 200, statementDeadline: Duration = .seconds(10)) {
        self.client = client
        self.logger = logger
        self.writers = writers
        self.batchLimit = batchLimit
        self.statementDeadline = statementDeadline
    }

    func register(_ registration: Registration) async throws -> Device {
        try await withCheckedThrowingContinuation { continuation in
            let startsWriter = state.withLock { state in
                state.waiting.append(Waiting(registration: registration, continuation: continuation))
                guard state.writing < writers else { return false }
                state.writing += 1
                return true
            }
            if startsWriter {
                // Detached: a writer serves many requests, not the one whose task-locals (its log
                // metadata) happen to start it.
                Task.detached { await self.write() }
            }
        }
    }

    private func write() async {
        while let batch = nextBatch() {
            await commit(batch)
        }
    }

    /// The waiting registrations that set the same columns as the first, one per token (a
    /// statement may not upsert a row twice); the rest wait for the next batch. Ends the writer
    /// when nothing waits.
    private func nextBatch() -> [Waiting]? {
        state.withLock { state in
            guard let first = state.waiting.first else {
                state.writing -= 1
                return nil
            }
            let columnsSet = first.registration.columnsSet
            var batch: [Waiting] = []
            var rest: [Waiting] = []
            var tokens = Set<TokenKey>()
            for waiting in state.waiting {
                if batch.count < batchLimit, waiting.registration.columnsSet == columnsSet,
                    tokens.insert(TokenKey(caseless: waiting.registration)).inserted
                {
                    batch.append(waiting)
                } else {
                    rest.append(waiting)
                }
            }
            state.waiting = rest
            return batch
        }
    }

    private func commit(_ batch: [Waiting]) async {
        do {
            let devices = try await upsert(batch.map(\.registration))
            for waiting in batch {
                let registration = waiting.registration
                if let device = devices[TokenKey(appID: registration.appID, token: registration.token)] {
                    waiting.continuation.resume(returning: device)
                } else {
                    waiting.continuation.resume(throwing: StoreError(description: "device upsert returned no row for a registration"))
                }
            }
        } catch let error as PSQLError where batch.count > 1 && error.serverInfo != nil && !isDatabaseUnavailable(error) {
            // PostgreSQL refused the statement (a constraint, a deadlock): find whose row it was.
            logger.debug(
                "registration batch refused; writing its rows one by one", metadata: ["rows": "\(batch.count)", "error": "\(String(reflecting: error))"])
            var unavailable: (any Error)?
            for waiting in batch {
                // Once the database is away, the rest are told so at once rather than tried in turn.
                if let unavailable {
                    waiting.continuation.resume(throwing: unavailable)
                    continue
                }
                do {
                    let devices = try await upsert([waiting.registration])
                    guard let device = devices.values.first else { throw StoreError(description: "device upsert returned no row") }
                    waiting.continuation.resume(returning: device)
                } catch {
                    if isDatabaseUnavailable(error) { unavailable = error }
                    waiting.continuation.resume(throwing: error)
                }
            }
        } catch {
            for waiting in batch { waiting.continuation.resume(throwing: error) }
        }
    }

    /// The devices as stored, by app and token exactly as sent (the upsert stores the token sent).
    private func upsert(_ registrations: [Registration]) async throws -> [TokenKey: Device] {
        state.withLock { $0.statements += 1 }
        let client = client
        let logger = logger
        do {
            // Answered only once committed (on a synchronous standby too).
            return try await withDeadline(statementDeadline) {
                try await client.committing(logger: logger) { connection in
                    var devices: [TokenKey: Device] = [:]
                    for device in try await DeviceUpsert(registrations: registrations).run(on: connection, prepared: client.preparesStatements, logger: logger)
                    {
                        devices[TokenKey(appID: device.appID, token: device.token)] = device
                    }
                    return devices
                }
            }
        } catch is DeadlineExceeded {
            throw DatabaseDidNotAnswer(after: statementDeadline)
        }
    }
}

/// A device's identity within a batch: its app and token. The batch takes one registration per
/// token in any case, so the exact spelling is unique too.
private struct TokenKey: Hashable {
    let appID: Int64
    let token: String

    init(appID: Int64, token: String) {
        self.appID = appID
        self.token = token
    }

    /// The key for keeping a batch to one registration per token, in any case.
    init(caseless registration: Registration) {
        self.init(appID: registration.appID, token: registration.token.lowercased())
    }
}
