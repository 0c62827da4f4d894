import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NotifiableApp
import NotifiableCore
import NotifiableTesting
import Testing

@Suite struct DatabaseOutageTests {
    /// The service starts against a port nothing listens on: the database is away.
    @Test func whileTheDatabaseIsAwayTheAPIAnswers503WithRetryAfterAtOnce() async throws {
        var configuration = try TestDatabase.serverConfiguration()
        configuration.databaseURL = "postgres://notifiable@127.0.0.1:1/none?sslmode=disable"
        configuration.migrateOnStart = false
        configuration.runsWorkers = false
        let app = try buildApplication(configuration, logger: TestDatabase.logger)
        try await app.test(.router) { client in
            var answer = try await client.execute(uri: "/api/v1/notifications", method: .get, headers: [:], body: nil)
            let deadline = Date().addingTimeInterval(30)  // two failed probes; slow on a loaded machine
            while answer.status != .serviceUnavailable, Date() < deadline {
                try await Task.sleep(for: .milliseconds(100))
                answer = try await client.execute(uri: "/api/v1/notifications", method: .get, headers: [:], body: nil)
            }
            #expect(answer.status == .serviceUnavailable)
            #expect(answer.headers[.retryAfter] == "1")
            #expect(answer.errorCode == "database_unavailable")
            let started = Date()
            let admin = try await client.execute(uri: "/admin/queue", method: .get, headers: [:], body: nil)
            #expect(admin.status == .serviceUnavailable)
            // Not waiting for a pooled connection, which the pool would keep failing to open for about a minute.
            #expect(Date().timeIntervalSince(started) < 10, "answered at once, not after waiting for a connection")
            let live = try await client.execute(uri: "/health/live", method: .get, headers: [:], body: nil)
            #expect(live.status == .ok)
            let ready = try await client.execute(uri: "/health/ready", method: .get, headers: [:], body: nil)
            #expect(ready.status == .serviceUnavailable)
            #expect(ready.errorCode == "database_unavailable")
        }
    }

    /// A commit that waits (on a synchronous standby that is gone, on a lock held elsewhere) must
    /// not keep its client waiting for ever: at the request deadline the request is answered 503,
    /// and its work, left running, may still take effect.
    @Test func aRequestStillRunningAtItsDeadlineIsAnswered503AndMayStillTakeEffect() async throws {
        try await withTestService(configure: { $0.requestDeadline = .seconds(1) }) { client, service in
            let app = try await service.createApp()
            // Registered in SQL: a registration through the API would be held to the 1 s deadline too.
            try await service.insertDevices(appID: app.app.id, count: 1, tokenSeed: 0xDEAD_11E)
            let device = try #require(try await service.integer("SELECT id FROM devices WHERE app_id = \(app.app.id)"))
            let token = try #require(try await service.text("SELECT token FROM devices WHERE id = \(device)"))
            let (held, holding) = AsyncStream<Void>.makeStream()
            let (release, releasing) = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await service.postgres.withTransaction(logger: TestDatabase.logger) { connection in
                    try await connection.query("SELECT id FROM devices WHERE id = \(device) FOR UPDATE", logger: TestDatabase.logger)
                    holding.yield()
                    for await _ in release { break }
                }
            }
            for await _ in held { break }

            let started = ContinuousClock.now
            let body = #"{"device_token": {"provider": "apns", "token": "\#(token)", "name": "Held back"}}"#
            let answer = try await client.signed(.post, "/api/v1/device_tokens", body: body, as: app.deviceCredential)
            let took = ContinuousClock.now - started
            releasing.yield()
            releasing.finish()
            try await holder.value
            #expect(answer.status == .serviceUnavailable)
            #expect(answer.errorCode == "request_deadline_exceeded")
            #expect(answer.headers[.retryAfter] == "5")
            #expect(took >= .seconds(1))
            // The deadline is checked four times a second; without it the request would wait until
            // the lock is released below, so any bound short of forever tells the two apart.
            #expect(took < .seconds(30), "answered \(took) after it was sent, 1 s deadline")

            let deadline = ContinuousClock.now + .seconds(30)
            var name = try await service.text("SELECT name FROM devices WHERE id = \(device)")
            while name != "Held back", ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                name = try await service.text("SELECT name FROM devices WHERE id = \(device)")
            }
            #expect(name == "Held back", "the work left running completes once the lock is released")
        }
    }

    @Test func requestsTheHTTPParserCannotReadGetJSONErrors() async throws {
        try await withTestService(.live) { client, _ in
            let port = try #require(client.port)
            let nul = await RawConnection.exchange(port: port, "GET /health/live HTTP/1.1\r\nHost: x\r\nX-Odd: a\u{0}b\r\n\r\n")
            #expect(nul.hasPrefix("HTTP/1.1 400 "))
            #expect(nul.contains("Content-Type: application/json; charset=utf-8"))
            #expect(nul.contains(#""code":"malformed_request""#))
            let padding = String(repeating: "p", count: 100 * 1024)
            let large = await RawConnection.exchange(port: port, "GET /health/live HTTP/1.1\r\nHost: x\r\nX-Padding: \(padding)\r\n\r\n")
            #expect(large.hasPrefix("HTTP/1.1 431 "))
            #expect(large.contains(#""code":"headers_too_large""#))
            let fine = await RawConnection.exchange(port: port, "GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(fine.hasPrefix("HTTP/1.1 200 "))
        }
    }
}
