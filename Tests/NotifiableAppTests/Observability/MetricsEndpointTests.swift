import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableTesting
import Testing

/// `GET /metrics`: Prometheus text, requests counted by route pattern, method and status.
@Suite struct MetricsEndpointTests {
    @Test func requestsAreCountedByRoutePatternMethodAndStatus() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            var ids: [Int64] = []
            for n in 1...3 {
                let token = String(format: "%064x", n)
                let answer = try await client.signed(
                    .post, "/api/v1/device_tokens", body: #"{"device_token": {"provider": "apns", "token": "\#(token)"}}"#,
                    as: app.deviceCredential
                )
                ids.append(try #require(answer.json["id"]?.intValue))
            }
            for id in ids.prefix(2) {
                let answer = try await client.signed(.patch, "/api/v1/device_tokens/\(id)", body: #"{"name": "iPad"}"#, as: app.deviceCredential)
                #expect(answer.status == .ok)
            }
            let invalid = try await client.signed(
                .post, "/api/v1/device_tokens", body: #"{"device_token": {"provider": "apns", "token": "zz"}}"#, as: app.deviceCredential)
            #expect(invalid.status == .unprocessableContent)
            _ = try await client.execute(uri: "/no/such/thing/987654321", method: .get, headers: [:], body: nil)

            let samples = try await client.scrape()
            let requests = "notifiable_http_requests_total"
            #expect(samples.value(requests, ["route": "/api/v1/device_tokens", "method": "POST", "status": "200"]) == 3)
            #expect(samples.value(requests, ["route": "/api/v1/device_tokens", "method": "POST", "status": "422"]) == 1)
            #expect(samples.value(requests, ["route": "/api/v1/device_tokens/{id}", "method": "PATCH", "status": "200"]) == 2)
            #expect(samples.value(requests, ["route": "NotFound", "method": "GET", "status": "404"]) == 1)
            // Raw paths never become labels.
            #expect(samples.all(requests).allSatisfy { !$0.labels["route", default: ""].contains("987654321") })
            let durations = "notifiable_http_request_duration_seconds_count"
            #expect(samples.value(durations, ["route": "/api/v1/device_tokens", "method": "POST", "status": "200"]) == 3)
            #expect(
                samples.value(
                    "notifiable_http_request_duration_seconds_bucket",
                    ["route": "/api/v1/device_tokens", "method": "POST", "status": "200", "le": "+Inf"]
                ) == 3)

            // The scrape itself is counted from the next one on.
            let again = try await client.scrape()
            #expect(again.value(requests, ["route": "/metrics", "method": "GET", "status": "200"]) == 1)
        }
    }

    @Test func everyApplicationCountsInItsOwnRegistry() async throws {
        try await withTestService { client, _ in
            _ = try await client.execute(uri: "/health/live", method: .get, headers: [:], body: nil)
            let samples = try await client.scrape()
            #expect(samples.value("notifiable_http_requests_total", ["route": "/health/live", "method": "GET", "status": "200"]) == 1)
        }
        try await withTestService { client, _ in
            let samples = try await client.scrape()
            #expect(samples.value("notifiable_http_requests_total", ["route": "/health/live", "method": "GET", "status": "200"]) == nil)
            // No workers in this application: no delivery series either.
            #expect(samples.all("notifiable_deliveries_total").isEmpty)
        }
    }

    @Test func queueDepthIsSampledFromTheDatabase() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            try await service.insertDevices(appID: app.app.id, count: 5, tokenSeed: 0x51)
            try await service.postgres.query(
                """
                INSERT INTO notifications (app_id, content, targeting, state) VALUES (\(app.app.id), '{}', '{}', 'fanned_out')
                """,
                logger: TestDatabase.logger
            )
            try await service.postgres.query(
                """
                INSERT INTO deliveries (notification_id, app_id, device_id, state, run_at, dead_at)
                SELECT (SELECT max(id) FROM notifications), \(app.app.id), id,
                       CASE WHEN n <= 3 THEN 'available' ELSE 'dead' END, now() - interval '90 seconds',
                       CASE WHEN n <= 3 THEN NULL ELSE now() END
                FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM devices WHERE app_id = \(app.app.id)) d
                """,
                logger: TestDatabase.logger
            )
            let samples = try await client.scrape()
            #expect(samples.value("notifiable_queue_deliveries", ["state": "available"]) == 3)
            #expect(samples.value("notifiable_queue_deliveries", ["state": "dead"]) == 2)
            #expect(samples.value("notifiable_queue_deliveries", ["state": "running"]) == 0)
            let age = try #require(samples.value("notifiable_queue_oldest_ready_age_seconds"))
            #expect(age >= 89 && age < 600)
            #expect(samples.value("notifiable_queue_notifications_fanning_out") == 0)
        }
    }
}
