import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// A Live Activity's events on the queue, driven by hand: they are what the team sent, so they
/// count, they reach webhooks, and a dead one can be re-queued; a newer event still replaces one
/// that waits.
@Suite struct LiveActivityQueueRulesTests {
    static func event(_ client: some TestClientProtocol, _ app: AppStore.CreatedApp, _ state: Int) async throws -> Int64 {
        let response = try await client.signed(
            .post, "/api/v1/live_activities", body: #"{"event": "update", "activity_id": "flight-9", "content_state": {"gate": \#(state)}}"#,
            as: app.serverCredential)
        #expect(response.status == .accepted, "\(String(buffer: response.body))")
        return try #require(response.json["notification_id"]?.intValue)
    }

    @Test func anActivitysPushesCountAndADeadOneIsRequeued() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xF1), alias: "flyer")
            let registered = try await client.signed(
                .post, "/api/v1/device_tokens/\(device)/live_activities", body: #"{"activity_id": "flight-9", "token": "\#(Pipeline.token(0xF2))"}"#,
                as: app.deviceCredential)
            #expect(registered.status == .ok)
            let webhook = try await client.admin(
                .post, "/admin/apps/\(app.app.id)/webhooks", body: #"{"url": "https://hooks.example.com/n", "events": ["sent", "dead"]}"#, service: service)
            #expect(webhook.status == .created, "\(String(buffer: webhook.body))")

            let id = try await Self.event(client, app, 1)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(id) AND kind = 'activity'") == 1)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            let first = try await queue.claim(limit: 10, lease: .seconds(30))
            try #require(first.count == 1)
            #expect(first[0].token == Pipeline.token(0xF2), "to the activity's token, not the device's")
            try await queue.record([DeliveryResult(deliveryID: first[0].id, attempt: first[0].attempt, state: .dead, reason: "ServiceUnavailable")])
            var kept = try await service.keptCounters(of: id)
            #expect(kept.dead == 1 && kept.targeted == 1)
            #expect(kept == (try await service.recountedCounters(of: id)))

            // An operator puts it back; it goes again, to the same token, and is sent.
            let admin = QueueAdminStore(client: service.postgres, logger: TestDatabase.logger)
            #expect(try await admin.requeueDead(appID: app.app.id, ids: nil) == 1)
            let again = try await queue.claim(limit: 10, lease: .seconds(30))
            try #require(again.count == 1)
            #expect(again[0].id == first[0].id && again[0].token == Pipeline.token(0xF2))
            try await queue.record([DeliveryResult(deliveryID: again[0].id, attempt: again[0].attempt, state: .sent)])

            // A retrying event that a newer one follows is cancelled at its next claim.
            _ = try await Self.event(client, app, 2)
            let second = try await queue.claim(limit: 10, lease: .seconds(30))
            try #require(second.count == 1)
            try await queue.record([DeliveryResult(deliveryID: second[0].id, attempt: second[0].attempt, state: .retrying, runAt: Date())])
            _ = try await Self.event(client, app, 3)
            let third = try await queue.claim(limit: 10, lease: .seconds(30))
            try #require(third.count == 1, "only the newer event goes")
            #expect(third[0].content.liveActivity?.contentState == ["gate": .integer(3)])
            try await queue.record([DeliveryResult(deliveryID: third[0].id, attempt: third[0].attempt, state: .sent)])
            #expect(
                try await service.text("SELECT reason FROM deliveries WHERE id = \(second[0].id) AND state = 'cancelled'")
                    == "device gone or a newer event of the activity supersedes this one")

            kept = try await service.keptCounters(of: id)
            #expect(kept.sent == 2 && kept.cancelled == 1 && kept.dead == 0 && kept.targeted == 3, "\(kept)")
            #expect(kept == (try await service.recountedCounters(of: id)))
            // The webhook heard of the death and both sends.
            let events = try await service.integers(
                "SELECT count(*) FILTER (WHERE type = 'sent') * 10 + count(*) FILTER (WHERE type = 'dead') FROM webhook_events WHERE payload ->> 'notification_id' = \(String(id))"
            )
            #expect(events == [21])
        }
    }
    /// A device that takes the token of another row of the app is the same phone: the activity
    /// it registered through the retired row still hears its events, through the survivor.
    @Test func aMergedDevicesActivityTokensMoveToTheSurvivor() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let old = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xB1), alias: "rider")
            let survivor = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xB2), alias: "rider")
            for (path, body) in [
                ("live_activities", #"{"activity_id": "bus-1", "token": "\#(Pipeline.token(0xB3))"}"#),
                ("push_to_start_tokens", #"{"attributes_type": "BusAttributes", "token": "\#(Pipeline.token(0xB4))"}"#),
            ] {
                let response = try await client.signed(.post, "/api/v1/device_tokens/\(old)/\(path)", body: body, as: app.deviceCredential)
                #expect(response.status == .ok, "\(path): \(String(buffer: response.body))")
            }
            let moved = try await client.signed(
                .patch, "/api/v1/device_tokens/\(survivor)", body: #"{"token": "\#(Pipeline.token(0xB1))"}"#, as: app.deviceCredential)
            #expect(moved.status == .ok)
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(old) AND merged_into = \(survivor)") == 1)
            #expect(try await service.integer("SELECT count(*) FROM live_activity_tokens WHERE device_id = \(survivor)") == 1)
            #expect(try await service.integer("SELECT count(*) FROM push_to_start_tokens WHERE device_id = \(survivor)") == 1)

            let event = try await client.signed(
                .post, "/api/v1/live_activities", body: #"{"event": "update", "activity_id": "bus-1", "content_state": {"stop": 4}}"#,
                as: app.serverCredential)
            #expect(event.json["devices"]?.intValue == 1)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            let claimed = try await queue.claim(limit: 10, lease: .seconds(30))
            try #require(claimed.count == 1)
            #expect(claimed[0].deviceID == survivor && claimed[0].token == Pipeline.token(0xB3))
        }
    }
    /// The app stops showing an activity on one phone: its token goes, and the event waiting for it
    /// is not sent; a repeat changes nothing, and another app cannot tell the device exists.
    @Test func aRemovedActivityTokenGetsNoWaitingEvent() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let other = try await service.createApp(name: "Other")
            let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xD1), alias: "dee")
            _ = try await client.signed(
                .post, "/api/v1/device_tokens/\(device)/live_activities", body: #"{"activity_id": "order 5", "token": "\#(Pipeline.token(0xD2))"}"#,
                as: app.deviceCredential)
            _ = try await client.signed(
                .post, "/api/v1/device_tokens/\(device)/push_to_start_tokens", body: #"{"attributes_type": "Order", "token": "\#(Pipeline.token(0xD3))"}"#,
                as: app.deviceCredential)
            let event = try await client.signed(
                .post, "/api/v1/live_activities", body: #"{"event": "update", "activity_id": "order 5", "content_state": {"step": 2}}"#,
                as: app.serverCredential)
            let id = try #require(event.json["notification_id"]?.intValue)

            let path = "/api/v1/device_tokens/\(device)/live_activities/order%205"
            #expect(try await client.signed(.delete, path, as: other.deviceCredential).status == .notFound)
            let removed = try await client.signed(.delete, path, as: app.deviceCredential)
            #expect(removed.status == .ok && removed.json["removed"] == .bool(true), "\(String(buffer: removed.body))")
            #expect(removed.json["activity_id"]?.stringValue == "order 5")
            #expect(try await client.signed(.delete, path, as: app.deviceCredential).json["removed"] == .bool(false))
            #expect(try await DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger).claim(limit: 10, lease: .seconds(30)).isEmpty)
            #expect(
                try await service.text("SELECT state || ': ' || reason FROM deliveries WHERE notification_id = \(id)") == "cancelled: activity token removed")
            let summary = try await client.signed(.get, "/api/v1/live_activities/order%205", as: app.serverCredential)
            #expect(summary.json["tokens"]?.intValue == 0)

            let startPath = "/api/v1/device_tokens/\(device)/push_to_start_tokens/Order"
            #expect(try await client.signed(.delete, startPath, as: app.deviceCredential).json["removed"] == .bool(true))
            #expect(try await service.integer("SELECT count(*) FROM push_to_start_tokens WHERE device_id = \(device)") == 0)
            let bad = try await client.signed(.delete, "/api/v1/device_tokens/\(device)/live_activities/a%01b", as: app.deviceCredential)
            #expect(bad.status == .unprocessableContent && bad.json["error"]?["field"]?.stringValue == "activity_id")
        }
    }
    /// Two events of one activity died for one device: re-queueing sends the newest again, and only it.
    @Test func ofAnActivitysDeadEventsOnlyTheNewestIsRequeued() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xE1), alias: "eve")
            _ = try await client.signed(
                .post, "/api/v1/device_tokens/\(device)/live_activities", body: #"{"activity_id": "flight-9", "token": "\#(Pipeline.token(0xE2))"}"#,
                as: app.deviceCredential)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            for gate in 1...2 {
                _ = try await Self.event(client, app, gate)
                let claimed = try await queue.claim(limit: 10, lease: .seconds(30))
                try #require(claimed.count == 1)
                try await queue.record([DeliveryResult(deliveryID: claimed[0].id, attempt: claimed[0].attempt, state: .dead, reason: "Shutdown")])
            }
            #expect(try await QueueAdminStore(client: service.postgres, logger: TestDatabase.logger).requeueDead(appID: app.app.id, ids: nil) == 1)
            let again = try await queue.claim(limit: 10, lease: .seconds(30))
            try #require(again.count == 1)
            #expect(again[0].content.liveActivity?.contentState == ["gate": .integer(2)])
        }
    }
}
