import Logging
import NotifiableStore
import PostgresNIO

/// LISTENs on the channel the API and fan-out NOTIFY, and rings the worker's bell, so idle lanes
/// start at once instead of at their next poll.
struct WakeListener: Sendable {
    /// A connection that keeps its session while it listens: not a pooler's in transaction mode,
    /// which would hand the server connection (and its LISTEN) to other clients between statements.
    let postgres: Database
    let logger: Logger

    /// Until cancelled: it only wakes the other stages, and ends when they have.
    func run(_ run: WorkerRun) async {
        while !Task.isCancelled {
            do {
                // `listen(on:)` sends UNLISTEN when it returns, so the connection goes back to the
                // pool without a listener still registered on it.
                try await postgres.withConnection { connection in
                    try await connection.listen(on: "notifiable_work") { notifications in
                        for try await notification in notifications {
                            if notification.payload == WorkerWake.channels.rawValue {
                                await run.channels.ring()
                            } else {
                                await run.work.ring()
                            }
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("LISTEN for work failed; polling meanwhile", metadata: ["error": "\(databaseErrorText(error))"])
                try? await Task.sleep(for: .seconds(2))
            }
        }
    }
}
