import NotifiableCore

/// A database step of a worker loop that did not answer within its deadline.
struct DatabaseStepTimedOut: Error, CustomStringConvertible {
    var step: String
    var deadline: Duration

    var description: String { "\(step) did not answer within \(deadline); abandoned, the loop carries on" }
}

/// Runs one database step of a worker loop, abandoning it after `deadline`.
///
/// A query written to a pooled connection in the instant PostgreSQL closes it is never answered
/// (postgres-nio 1.33 fails nothing when that write fails), so an unbounded await would strand the
/// loop for good after a database restart. Abandoning is safe for every step a worker takes: a claim
/// that completes late leaves its deliveries leased until the lease runs out and they are rescued;
/// a record or release that completes late only does what the next attempt does again.
func databaseStep<Value: Sendable>(
    _ step: String, deadline: Duration, _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    do {
        return try await withDeadline(deadline, operation)
    } catch is DeadlineExceeded {
        throw DatabaseStepTimedOut(step: step, deadline: deadline)
    }
}
