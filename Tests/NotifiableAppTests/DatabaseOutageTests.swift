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
            #expect(Date().timeIntervalSince(started) < 1, "answered at once, not after waiting for a connection")
            let live = try await client.execute(uri: "/health/live", method: .get, headers: [:], body: nil)
            #expect(live.status == .ok)
            let ready = try await client.execute(uri: "/health/ready", method: .get, headers: [:], body: nil)
            #expect(ready.status == .serviceUnavailable)
            #expect(ready.errorCode == "database_unavailable")
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
