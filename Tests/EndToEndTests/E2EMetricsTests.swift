import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableTesting
import Testing

/// `/metrics` after real traffic through the workers and a fake APNs.
@Suite struct E2EMetricsTests {
    @Test func registrationsAndDeliveriesAreCounted() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let registrations = 5, audience = 3
                for n in 0..<registrations {
                    _ = try await Pipeline.register(
                        client, app.deviceCredential, token: Pipeline.token(0x3E00 + n), alias: n < audience ? "alice" : "bob"
                    )
                }
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "Hi", "user_aliases": ["alice"]}"#)
                #expect(try await Pipeline.settled(service, id))

                let samples = try await client.scrape()
                #expect(
                    samples.value("notifiable_http_requests_total", ["route": "/api/v1/device_tokens", "method": "POST", "status": "200"])
                        == Double(registrations))
                #expect(samples.value("notifiable_http_requests_total", ["route": "/api/v1/notifications", "method": "POST", "status": "202"]) == 1)
                #expect(samples.all("notifiable_deliveries_total", matching: ["provider": "apns", "outcome": "sent"]).total == Double(audience))
                // Per app: this app's sends under its own id, no other app's.
                #expect(samples.value("notifiable_deliveries_total", ["app_id": "\(app.app.id)", "provider": "apns", "outcome": "sent"]) == Double(audience))
                // The app's other series exist, at zero.
                #expect(samples.value("notifiable_deliveries_total", ["app_id": "\(app.app.id)", "provider": "apns", "outcome": "failed"]) == 0)
                #expect(samples.value("notifiable_deliveries_total", ["app_id": "\(app.app.id)", "provider": "fcm", "outcome": "sent"]) == 0)
                #expect(samples.value("notifiable_delivery_retries_total", ["provider": "apns"]) == 0)
                #expect(samples.value("notifiable_gateway_request_duration_seconds_count", ["provider": "apns", "mode": "live"]) == Double(audience))
                let seconds = try #require(samples.value("notifiable_gateway_request_duration_seconds_sum", ["provider": "apns", "mode": "live"]))
                #expect(seconds > 0 && seconds < 15)
                #expect(samples.value("notifiable_queue_deliveries", ["state": "available"]) == 0)
            }
        }
    }

    @Test func retriesAndDeadTokensAreCountedAndTokensLoggedOnlyByPrefix() async throws {
        let capture = LogCapture()
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true, logger: capture.logger(level: .info)) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let flaky = Pipeline.token(0x3E50), gone = Pipeline.token(0xDEAD3E51)
                let first = try await Pipeline.register(client, app.deviceCredential, token: flaky)
                let second = try await Pipeline.register(client, app.deviceCredential, token: gone)
                gateway.script(token: flaky, [.serviceUnavailable, .accept])
                // Unregistered since after the registration, so the verdict is not stale.
                try await Task.sleep(for: .milliseconds(5))
                gateway.script(token: gone, [.unregistered(since: Date())])
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "Hi", "device_ids": [\#(first), \#(second)]}"#)
                #expect(try await Pipeline.settled(service, id))

                let samples = try await client.scrape()
                let story = try await service.describeDeliveries(of: id)
                #expect(samples.all("notifiable_deliveries_total", matching: ["provider": "apns", "outcome": "retrying"]).total == 1, "\(story)")
                #expect(samples.all("notifiable_deliveries_total", matching: ["provider": "apns", "outcome": "sent"]).total == 1, "\(story)")
                #expect(samples.all("notifiable_deliveries_total", matching: ["provider": "apns", "outcome": "token_invalidated"]).total == 1, "\(story)")
                // Every series of the app exists from its first attempt, at zero until counted.
                #expect(samples.value("notifiable_deliveries_total", ["app_id": "\(app.app.id)", "provider": "apns", "outcome": "failed"]) == 0)
                #expect(samples.value("notifiable_deliveries_total", ["app_id": "\(app.app.id)", "provider": "fcm", "outcome": "token_invalidated"]) == 0)
                #expect(samples.value("notifiable_delivery_retries_total", ["provider": "apns"]) == 1)
                #expect(samples.value("notifiable_token_invalidations_total", ["provider": "apns"]) == 1)
                #expect(samples.value("notifiable_gateway_request_duration_seconds_count", ["provider": "apns", "mode": "live"]) == 3)
            }
        }
        #expect(capture.text.contains("device token invalidated"))
        let gone = Pipeline.token(0xDEAD3E51)
        #expect(capture.text.contains("token=\(gone.prefix(8))…"))
        #expect(!capture.text.contains(gone))
    }

    /// A connection lost under a push: APNs may have taken it. The attempt is tried again and
    /// counted as of unknown outcome, on the delivery and in /metrics.
    @Test func anAttemptWithoutAnAnswerIsCountedAsOfUnknownOutcome() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0x0DD_0C0E)
                let device = try await Pipeline.register(client, app.deviceCredential, token: token)
                gateway.script(token: token, [.dropConnection, .accept])
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "Hi", "device_ids": [\#(device)]}"#)
                #expect(try await Pipeline.settled(service, id))

                let story = try await service.describeDeliveries(of: id)
                #expect(try await service.deliveries(of: id, in: "sent") == 1, "\(story)")
                #expect(try await service.integer("SELECT unknown_outcomes FROM deliveries WHERE notification_id = \(id)") == 1, "\(story)")
                let samples = try await client.scrape()
                #expect(samples.value("notifiable_delivery_unknown_outcomes_total", ["provider": "apns"]) == 1)
                #expect(samples.value("notifiable_delivery_unknown_outcomes_total", ["provider": "fcm"]) == 0)
                #expect(samples.value("notifiable_delivery_retries_total", ["provider": "apns"]) == 1)
                #expect(samples.value("notifiable_queue_given_back_total", [:]) == 0)
            }
        }
    }
}
