import Foundation
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// The batch queue's rules, driven by hand (no workers): batches in order and one at a time
/// per webhook, leases, and outcomes that count only for the claim they belong to.
@Suite struct WebhookQueueTests {
    static func setUp(_ service: TestService, events: Int) async throws -> (queue: WebhookQueueStore, webhookID: Int64) {
        let app = try await service.createApp()
        let registry = WebhookStore(client: service.postgres, keys: service.configuration.keys, logger: TestDatabase.logger)
        let created = try #require(try await registry.create(appID: app.app.id, WebhookSubscription(url: "http://127.0.0.1:9/h", eventNames: nil)))
        try await service.postgres.query(
            """
            INSERT INTO webhook_events (webhook_id, type, occurred_at, payload)
            SELECT \(created.webhook.id), 'sent', now(), jsonb_build_object('delivery_id', n) FROM generate_series(1, \(events)) AS n
            """,
            logger: TestDatabase.logger
        )
        return (WebhookQueueStore(client: service.postgres, keys: service.configuration.keys, logger: TestDatabase.logger), created.webhook.id)
    }

    @Test func oneBatchAtATimeInOrderAndALateOutcomeCountsForNothing() async throws {
        try await withTestService(isolatedDatabase: true) { _, service in
            let (queue, webhookID) = try await Self.setUp(service, events: 5)
            #expect(try await queue.formBatches(batchSize: 2) == 1)
            // The first batch is unfinished: no second one forms.
            #expect(try await queue.formBatches(batchSize: 2) == 0)
            let first = try await queue.claim(limit: 10, lease: .milliseconds(1))
            #expect(first.count == 1)
            let batch = try #require(first.first)
            #expect(batch.webhookID == webhookID && batch.attempt == 1 && batch.eventIDs.count == 2)
            #expect(batch.secret?.hasPrefix("whsec_") == true)
            let body = try JSONValue.decode(batch.body)
            #expect(body["events"]?.arrayValue?.compactMap { $0["event_id"]?.intValue } == batch.eventIDs)
            #expect(body["events"]?[0]?["delivery_id"]?.intValue == 1)

            // The worker holding it died: its lease runs out and the batch returns, not as the receiver's failure.
            try await Task.sleep(for: .milliseconds(20))
            #expect(try await queue.rescueExpiredLeases() == 1)
            let again = try #require(try await queue.claim(limit: 10, lease: .seconds(30)).first)
            #expect(again.id == batch.id && again.attempt == 2 && again.eventIDs == batch.eventIDs)
            // The first claim's answer arrives late: it changes nothing.
            try await queue.recordDelivered(batch, status: 200)
            #expect(try await service.integer("SELECT count(*) FROM webhook_batches WHERE state = 'running'") == 1)

            try await queue.recordDelivered(again, status: 204)
            #expect(try await queue.formBatches(batchSize: 2) == 1)
            let second = try #require(try await queue.claim(limit: 10, lease: .seconds(30)).first)
            #expect(second.eventIDs.allSatisfy { $0 > batch.eventIDs.max()! })
            #expect(try await service.integer("SELECT consecutive_failures FROM webhooks WHERE id = \(webhookID)") == 0)
        }
    }

    @Test func failuresWaitTheirTurnAndPauseTheWebhookAtTheLimit() async throws {
        try await withTestService(isolatedDatabase: true) { _, service in
            let (queue, webhookID) = try await Self.setUp(service, events: 1)
            try await queue.formBatches(batchSize: 100)
            let first = try #require(try await queue.claim(limit: 10, lease: .seconds(30)).first)
            #expect(try await !queue.recordFailed(first, status: 503, error: "HTTP 503", runAt: Date().addingTimeInterval(3600), pauseAfter: 2))
            // Not due yet.
            #expect(try await queue.claim(limit: 10, lease: .seconds(30)).isEmpty)
            try await service.postgres.query("UPDATE webhook_batches SET run_at = now()", logger: TestDatabase.logger)
            let second = try #require(try await queue.claim(limit: 10, lease: .seconds(30)).first)
            #expect(second.consecutiveFailures == 1)
            #expect(try await queue.recordFailed(second, status: nil, error: "connection refused", runAt: Date(), pauseAfter: 2))
            // Paused: due, but not claimed.
            #expect(try await queue.claim(limit: 10, lease: .seconds(30)).isEmpty)
            let registry = WebhookStore(client: service.postgres, keys: service.configuration.keys, logger: TestDatabase.logger)
            let appID = try #require(try await service.integer("SELECT app_id FROM webhooks WHERE id = \(webhookID)"))
            let paused = try #require(try await registry.webhook(appID: appID, id: webhookID))
            #expect(paused.state == .paused && paused.pausedReason == "2 attempts in a row failed; the last: connection refused")
            let resumed = try #require(try await registry.resume(appID: appID, id: webhookID))
            #expect(resumed.state == .active && resumed.consecutiveFailures == 0)
            let third = try #require(try await queue.claim(limit: 10, lease: .seconds(30)).first)
            #expect(third.id == first.id && third.attempt == 3 && third.consecutiveFailures == 0)
        }
    }

    @Test func deliveredBatchesPastRetentionGoWithTheirEventsAndNothingElseDoes() async throws {
        try await withTestService(isolatedDatabase: true) { _, service in
            let (queue, webhookID) = try await Self.setUp(service, events: 3)
            try await queue.formBatches(batchSize: 2)
            let batch = try #require(try await queue.claim(limit: 10, lease: .seconds(30)).first)
            try await queue.recordDelivered(batch, status: 200)
            try await queue.formBatches(batchSize: 2)
            #expect(try await queue.pruneDelivered(retention: .seconds(3600)) == 0)
            try await service.postgres.query(
                "UPDATE webhook_batches SET delivered_at = now() - interval '2 hours' WHERE id = \(batch.id)", logger: TestDatabase.logger
            )
            #expect(try await queue.pruneDelivered(retention: .seconds(3600)) == 1)
            // The unsent batch and its event stay.
            #expect(try await service.integer("SELECT count(*) FROM webhook_events WHERE webhook_id = \(webhookID)") == 1)
            #expect(try await service.integer("SELECT count(*) FROM webhook_batches WHERE webhook_id = \(webhookID) AND state = 'available'") == 1)
        }
    }
}
