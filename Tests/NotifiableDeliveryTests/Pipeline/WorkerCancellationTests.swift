import Foundation
import NotifiableApp
import NotifiableDelivery
import NotifiableTesting
import PostgresNIO
import Testing

/// A worker whose task is cancelled (a service group that stopped waiting for it) ends, instead of spinning on
/// errors and on sleeps that return at once.
@Suite(.timeLimit(.minutes(1))) struct WorkerCancellationTests {
    /// Runs `work` for half a second, cancels it, and answers how long it took to end.
    private func timeToStop(_ work: @escaping @Sendable () async throws -> Void) async throws -> Duration {
        let running = Task { try await work() }
        try await Task.sleep(for: .milliseconds(500))
        let clock = ContinuousClock()
        let cancelled = clock.now
        running.cancel()
        _ = try? await running.value
        return cancelled.duration(to: clock.now)
    }

    @Test func cancelledWorkersStopWhileTheirQueriesFail() async throws {
        try await TestDatabase.withFreshDatabase { url in
            var configuration = try TestDatabase.serverConfiguration()
            configuration.databaseURL = url
            let postgres = try makeDatabase(configuration, logger: TestDatabase.logger)
            let client = Task { try? await postgres.run() }
            // Not migrated: every claim fails, and the loops wait a second before trying again.
            let delivery = makeDeliveryWorker(configuration, postgres: postgres, logger: TestDatabase.logger)
            let webhooks = makeWebhookWorker(configuration, postgres: postgres, logger: TestDatabase.logger)
            #expect(try await timeToStop { try await delivery.run() } < .seconds(5))
            #expect(try await timeToStop { try await webhooks.run() } < .seconds(5))
            client.cancel()
        }
    }
}
