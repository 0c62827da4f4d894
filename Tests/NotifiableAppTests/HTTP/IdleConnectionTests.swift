import Foundation
import HummingbirdTesting
import NotifiableTesting
import Testing

/// A client that opens connections and sends nothing, or trickles a request head, or keeps a
/// connection idle after an answer, holds a descriptor each: the server closes such connections
/// after the idle timeout (NOTIFIABLE_IDLE_TIMEOUT_SECONDS; 1 s here), and answers others meanwhile.
@Suite struct IdleConnectionTests {
    @Test func connectionsThatSendNoCompleteRequestHeadOrSitIdleAreClosed() async throws {
        try await withTestService(.live, configure: { $0.idleTimeout = .seconds(1) }) { client, _ in
            let port = try #require(client.port)
            let head = Array("GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: \(String(repeating: "p", count: 40))\r\n\r\n".utf8)
            async let silent = RawConnection.run(port: port, sending: [], limit: 30)
            // One byte of a head every 200 ms: it would take 20 s to complete.
            async let trickling = RawConnection.run(port: port, sending: head.map { (0.2, [$0]) }, limit: 30)
            // A whole request, answered, then nothing: an idle keep-alive connection.
            async let idle = RawConnection.run(port: port, sending: [(0, head)], limit: 30)
            // Meanwhile the server answers as usual.
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await client.execute(uri: "/health/live", method: .get).status == .ok)

            let (silentEnd, tricklingEnd, idleEnd) = await (silent, trickling, idle)
            for (name, ending) in [("silent", silentEnd), ("trickling", tricklingEnd), ("idle after an answer", idleEnd)] {
                let closed = try #require(ending.closedAfter, "\(name): still open after 30 s")
                // Not before the timeout; well before the 20 s the trickled head would take, with
                // room for a starved machine's lateness.
                #expect(closed >= 0.9 && closed < 12, "\(name): closed after \(closed) s")
            }
            #expect(String(decoding: idleEnd.received, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
            #expect(tricklingEnd.received.isEmpty)
        }
    }
}

/// `serve` raises its soft limit on open descriptors to the hard limit and says so.
@Suite struct DescriptorLimitTests {
    @Test func serveRaisesTheSoftDescriptorLimitAndLogsIt() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let environment = ProcessInfo.processInfo.environment.merging([
                "DATABASE_URL": url, "NOTIFIABLE_MASTER_KEY": TestDatabase.masterKey.base64, "LOG_LEVEL": "info",
                "NOTIFIABLE_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path, "PORT": String(Int.random(in: 40_000...60_000)),
            ]) { _, new in new }
            // A soft limit of 256 under a higher hard one (4096, or this machine's hard limit when it is
            // lower: only root may raise it); serve runs 8 s (the line comes first thing, but a
            // starved machine starts a debug build slowly) and is stopped.
            var limit = rlimit()
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            let hard = min(4096, Int(limit.rlim_max))
            try #require(hard > 256, "the hard open-file limit (\(hard)) leaves no room above 256")
            let (_, output) = try await runProgram(
                URL(fileURLWithPath: "/bin/sh"),
                [
                    "-c", #"ulimit -Sn 256 && ulimit -Hn "$1" && exec timeout -s TERM 8 "$0" serve --no-workers"#, NotifiableProcess.executable.path,
                    String(hard),
                ],
                environment: environment
            )
            #expect(output.contains("raised the open-file limit to the hard limit"), "\(output)")
            #expect(output.contains("from=256") && output.contains("to=\(hard)"), "\(output)")
        }
    }
}
