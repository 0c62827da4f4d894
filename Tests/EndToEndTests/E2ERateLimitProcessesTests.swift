import Foundation
import HTTPTypes
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// Two API processes keep one limit between them: each holds half of it once they know of each
/// other, so a client spreading its requests over both gets the limit, not twice the limit.
@Suite struct E2ERateLimitProcessesTests {
    /// The status of a signed POST sent to the process on `port`.
    static func post(port: Int, path: String, body: String, as credential: Credential) async -> Int? {
        let headers = signedHeaders(method: .post, path: path, body: body, credential: credential)
        var text = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
        for field in headers { text += "\(field.name): \(field.value)\r\n" }
        let answer = await RawConnection.exchange(port: port, text + "\r\n" + body)
        return answer.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) }
    }

    /// The one integer a query answers.
    static func integer(_ postgres: Database, _ query: PostgresQuery) async throws -> Int64 {
        for try await value in try await postgres.query(query, logger: TestDatabase.logger).decode(Int64.self) { return value }
        return 0
    }

    @Test func twoProcessesTogetherAdmitOneLimit() async throws {
        try await TestDatabase.withFreshDatabase { url in
            // The app is made by a test service that then stops, so that only the two processes beat.
            let app = try await withTestService(onDatabase: url) { _, service in try await service.createApp() }
            try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { postgres in
                let ports = [freeLoopbackPort(), freeLoopbackPort()]
                let processes = try ports.map { port in
                    try NotifiableProcess(
                        ["serve", "--no-workers"],
                        environment: [
                            "DATABASE_URL": url, "NOTIFIABLE_MASTER_KEY": TestDatabase.masterKey.base64,
                            "NOTIFIABLE_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path, "PORT": "\(port)",
                            "NOTIFIABLE_RATE_LIMIT_SENDS": "20/h", "NOTIFIABLE_API_BEAT_SECONDS": "3", "LOG_LEVEL": "error",
                        ])
                }
                // Both answer, and each has counted the other: two live rows, then two more beats.
                var known = false
                let deadline = ContinuousClock.now + .seconds(60)
                while !known, ContinuousClock.now < deadline {
                    var answering = 0
                    for port in ports {
                        let health = await RawConnection.exchange(port: port, "GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                        if health.hasPrefix("HTTP/1.1 200") { answering += 1 }
                    }
                    let live = try await Self.integer(postgres, "SELECT count(*) FROM api_processes WHERE seen_at > now() - interval '9 seconds'")
                    known = answering == 2 && live == 2
                    if !known { try await Task.sleep(for: .milliseconds(200)) }
                }
                #expect(known)
                // Beats every 3 s, live for 9: a starved process misses none of its share.
                try await Task.sleep(for: .seconds(7.5))

                var statuses: [Int: Int] = [:]
                for round in 0..<20 {
                    for port in ports {
                        let status = await Self.post(
                            port: port, path: "/api/v1/notifications", body: #"{"message": "m\#(round)", "all": true}"#,
                            as: app.serverCredential
                        )
                        statuses[status ?? 0, default: 0] += 1
                    }
                }
                // 20 an hour, 10 in each process; at this rate nothing refills during the test.
                #expect(statuses[202] == 20, "\(statuses)")
                #expect(statuses[429] == 20, "\(statuses)")
                #expect(try await Self.integer(postgres, "SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 20)

                // One stops and leaves the roster; the other is left alone in it.
                await processes[1].terminate()
                #expect(try await Self.integer(postgres, "SELECT count(*) FROM api_processes") == 1)
                await processes[0].terminate()
            }
        }
    }
}
