import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NotifiableApp
import NotifiableCore
import NotifiableTesting
import Testing

#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

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
            let nul = try rawExchange(port: port, "GET /health/live HTTP/1.1\r\nHost: x\r\nX-Odd: a\u{0}b\r\n\r\n")
            #expect(nul.hasPrefix("HTTP/1.1 400 "))
            #expect(nul.contains("Content-Type: application/json; charset=utf-8"))
            #expect(nul.contains(#""code":"malformed_request""#))
            let padding = String(repeating: "p", count: 100 * 1024)
            let large = try rawExchange(port: port, "GET /health/live HTTP/1.1\r\nHost: x\r\nX-Padding: \(padding)\r\n\r\n")
            #expect(large.hasPrefix("HTTP/1.1 431 "))
            #expect(large.contains(#""code":"headers_too_large""#))
            let fine = try rawExchange(port: port, "GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(fine.hasPrefix("HTTP/1.1 200 "))
        }
    }

    struct SocketFailure: Error {}

    /// Sends `text` as is on a fresh TCP connection (clients refuse to send such requests) and
    /// returns everything read until the server closes it.
    private func rawExchange(port: Int, _ text: String) throws -> String {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw SocketFailure() }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw SocketFailure() }
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }  // the server may answer and close before reading it all
            sent += count
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}
