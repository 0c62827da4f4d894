import AsyncHTTPClient
import Foundation
import NotifiableSandbox
import Testing

/// Faults and statistics seen through real HTTP/2 clients.
@Suite("Fake gateways: fault injection and statistics", .timeLimit(.minutes(1)))
struct SandboxGatewayFaultInjectionTests {
    func only(_ fault: String, seed: UInt64 = 1) throws -> SandboxGatewayFaultMix {
        try SandboxGatewayFaultMix.parse(["\(fault)=1"], seed: seed)
    }

    @Test("APNs: 503 with and without retry-after, and 410 Unregistered timestamped now")
    func apnsAnswers() async throws {
        try await withGateway { harness async throws in
            harness.gateway.setFaults(try only("unavailable:3"))
            let limited = try await harness.send(try harness.validPush())
            #expect(limited.status == 503)
            #expect(limited.reason == "ServiceUnavailable")
            #expect(limited.retryAfter == "3")

            harness.gateway.setFaults(try only("unavailable"))
            let unavailable = try await harness.send(try harness.validPush())
            #expect(unavailable.status == 503)
            #expect(unavailable.retryAfter == nil)

            harness.gateway.setFaults(try only("unregistered"))
            let gone = try await harness.send(try harness.validPush())
            #expect(gone.status == 410)
            #expect(gone.reason == "Unregistered")
            let timestamp = try #require(gone.timestamp)
            #expect(abs(Double(timestamp) / 1000 - Date().timeIntervalSince1970) < 60)
            #expect(harness.gateway.acceptedCount == 0)
            #expect(harness.gateway.stats.outcomes == ["unavailable:3": 1, "unavailable": 1, "unregistered": 1])
        }
    }

    @Test("APNs: a reset stream, a dropped connection and silence fail the request; the gateway serves the next one")
    func apnsTransportFaults() async throws {
        try await withGateway { harness async throws in
            for fault in ["reset-stream", "drop-connection", "timeout"] {
                harness.gateway.setFaults(try only(fault))
                await #expect(throws: (any Error).self, "\(fault)") {
                    // Silence is waited out; a reset or a drop fails at once. Silence's deadline still leaves a loaded
                    // machine time to get the request to the gateway, which counts it.
                    _ = try await harness.send(try harness.validPush(), timeoutSeconds: fault == "timeout" ? 8 : 15)
                }
                harness.gateway.setFaults(nil)
                // The client may not have noticed the dropped connection yet: its first try can fail on it.
                let next: PushAnswer
                if fault == "drop-connection", let answer = try? await harness.send(try harness.validPush()) {
                    next = answer
                } else {
                    next = try await harness.send(try harness.validPush())
                }
                #expect(next.status == 200, "after \(fault)")
            }
            let stats = harness.gateway.stats
            #expect(stats.outcomes["reset-stream"] == 1 && stats.outcomes["drop-connection"] == 1 && stats.outcomes["timeout"] == 1)
            // A first try on the dropped connection may or may not have reached the gateway before the client noticed.
            #expect((3...4).contains(stats.outcomes["accepted"] ?? 0), "\(stats.outcomes)")
            #expect(stats.outcomes.count == 4, "\(stats.outcomes)")
        }
    }

    @Test("APNs: a token's n-th request gets the mix's n-th draw for that token")
    func apnsDrawsFollowTheMix() async throws {
        try await withGateway { harness async throws in
            let mix = try SandboxGatewayFaultMix.parse(["unavailable=0.5"], seed: 9)
            harness.gateway.setFaults(mix)
            for token in [deviceToken(1), deviceToken(2)] {
                for attempt in 0..<8 {
                    let answer = try await harness.send(try harness.validPush(to: token))
                    let expected: UInt = mix.fault(token: token, earlierRequests: attempt) == nil ? 200 : 503
                    #expect(answer.status == expected, "\(token) attempt \(attempt)")
                }
            }
        }
    }

    @Test("APNs: statistics per outcome, per signing key (a refused key included) and per token; the log keeps every request in order")
    func apnsStatistics() async throws {
        try await withGateway { harness async throws in
            harness.gateway.setObserving(statistics: true, requestLog: true)
            let again = deviceToken(1), once = deviceToken(2)
            for _ in 0..<3 { #expect(try await harness.send(try harness.validPush(to: again)).status == 200) }
            #expect(try await harness.send(try harness.validPush(to: once)).status == 200)
            let revoked = ProviderKey(teamID: "TEAM123456", keyID: "REVOKED001")
            let refused = try await harness.send(PushRequest(token: once, jwt: try revoked.token()))
            #expect(refused.reason == "InvalidProviderToken")

            let stats = harness.gateway.stats
            #expect(stats.requests == 5)
            #expect(stats.accepted == 4)
            #expect(stats.outcomes == ["accepted": 4, "InvalidProviderToken": 1])
            #expect(stats.keys == ["TEAM123456:KEY1234567": ["accepted": 4], "TEAM123456:REVOKED001": ["InvalidProviderToken": 1]])
            #expect(stats.tokensSeen == 2)
            #expect(stats.tokensAccepted == 2)
            #expect(stats.acceptedMoreThanOnce == [again: 3])
            #expect(stats.duplicateAccepts == 2)

            let log = harness.gateway.drainRequestLog()
            #expect(log.map(\.token) == [again, again, again, once, once])
            #expect(log.map(\.status) == [200, 200, 200, 200, 403])
            #expect(log.last?.key == "TEAM123456:REVOKED001")
            #expect(zip(log, log.dropFirst()).allSatisfy { $0.arrivedAt <= $1.arrivedAt })
            #expect(harness.gateway.drainRequestLog().isEmpty)

            harness.gateway.reset()
            #expect(harness.gateway.stats.requests == 0)
            #expect(harness.gateway.stats.keys.isEmpty)
        }
    }

    @Test("FCM: 503 UNAVAILABLE with retry-after, 404 UNREGISTERED, reset, silence; statistics per service account")
    func fcmFaults() async throws {
        try await withFCMGateway { harness async throws in
            harness.gateway.setObserving(statistics: true, requestLog: true)
            let accessToken = try await harness.accessToken()
            let token = registrationToken(1)

            harness.gateway.setFaults(try only("unavailable:2"))
            let unavailable = try await harness.send(messageBody(to: token), bearer: accessToken)
            #expect(unavailable.status == 503)
            #expect(unavailable.fcmErrorCode == "UNAVAILABLE")
            #expect(unavailable.retryAfter == "2")

            harness.gateway.setFaults(try only("unregistered"))
            let gone = try await harness.send(messageBody(to: token), bearer: accessToken)
            #expect(gone.status == 404)
            #expect(gone.fcmErrorCode == "UNREGISTERED")

            for fault in ["reset-stream", "timeout"] {
                harness.gateway.setFaults(try only(fault))
                await #expect(throws: (any Error).self, "\(fault)") {
                    _ = try await harness.request(
                        "POST", harness.sendPath(), headers: [("authorization", "Bearer \(accessToken)")],
                        body: messageBody(to: token), timeoutSeconds: fault == "timeout" ? 8 : 15
                    )
                }
            }
            harness.gateway.setFaults(nil)
            #expect(try await harness.send(messageBody(to: token), bearer: accessToken).status == 200)
            #expect(try await harness.send(messageBody(to: token), bearer: nil).status == 401)

            let stats = harness.gateway.stats
            let outcomes = ["unavailable:2": 1, "unregistered": 1, "reset-stream": 1, "timeout": 1, "accepted": 1]
            #expect(stats.outcomes == outcomes.merging(["UNAUTHENTICATED": 1]) { $1 })
            #expect(stats.keys == [harness.account.clientEmail: outcomes, "": ["UNAUTHENTICATED": 1]])
            #expect(stats.tokensAccepted == 1)
            #expect(stats.acceptedMoreThanOnce.isEmpty)
            let log = harness.gateway.drainRequestLog()
            #expect(log.map(\.outcome) == ["unavailable:2", "unregistered", "reset-stream", "timeout", "accepted", "UNAUTHENTICATED"])
            #expect(log.map(\.retryAfterSeconds) == [2, nil, nil, nil, nil, nil])
            #expect(log.map(\.status) == [503, 404, nil, nil, 200, 401])
        }
    }

    @Test("Statistics files: the JSON reads back as the statistics, the request log as a header and one line per request")
    func statsFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fake-gateway-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let statsPath = directory.appendingPathComponent("stats.json").path
        let logPath = directory.appendingPathComponent("requests.tsv").path
        let files = try SandboxGatewayStatsFiles(statsPath: statsPath, requestLogPath: logPath)

        var stats = SandboxGatewayStats()
        stats.requests = 3
        stats.accepted = 2
        stats.outcomes = ["accepted": 2, "timeout": 1]
        stats.keys = ["T:K": ["accepted": 2, "timeout": 1]]
        stats.acceptedMoreThanOnce = ["abc": 2]
        stats.duplicateAccepts = 1
        let records = [
            SandboxGatewayRequestRecord(
                arrivedAt: Date(timeIntervalSince1970: 1_700_000_000.000042), token: "abc", key: "T:K", outcome: "unavailable:1",
                status: 503, retryAfterSeconds: 1, connection: 7
            ),
            SandboxGatewayRequestRecord(
                arrivedAt: Date(timeIntervalSince1970: 1_700_000_001.5), token: "abc", key: "T:K", outcome: "timeout",
                status: nil, retryAfterSeconds: nil
            ),
        ]
        try files.write(stats: stats, records: Array(records.prefix(1)))
        try files.write(stats: stats, records: Array(records.dropFirst()))
        files.close()

        let decoded = try JSONDecoder().decode(SandboxGatewayStats.self, from: Data(contentsOf: URL(fileURLWithPath: statsPath)))
        #expect(decoded == stats)
        let json = try String(contentsOfFile: statsPath, encoding: .utf8)
        #expect(json.contains(#""accepted_more_than_once":{"abc":2}"#))
        let lines = try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(
            lines == [
                "arrived_at\ttoken\tkey\toutcome\tstatus\tretry_after\tconnection",
                "1700000000.000042\tabc\tT:K\tunavailable:1\t503\t1\t7",
                "1700000001.500000\tabc\tT:K\ttimeout\t\t\t0",
            ])
    }
}
