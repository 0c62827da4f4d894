import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP connection to a loopback port driven byte by byte, as a hostile client drives one:
/// it sends what it is told, when it is told, and reports when the server closed it. Runs on a
/// thread of its own, so its blocking calls never hold one of Swift's executor threads.
public enum RawConnection {
    /// What happened to the connection.
    public struct Ending: Sendable {
        /// Seconds from connecting until the server closed it; nil when it was still open at `limit`.
        public let closedAfter: Double?
        /// Everything the server sent.
        public let received: [UInt8]
    }

    /// Connects to 127.0.0.1:`port`, sends each chunk after its delay (seconds from the previous
    /// one), then waits for the server to close; gives up at `limit` seconds from connecting.
    public static func run(port: Int, sending chunks: [(delay: Double, bytes: [UInt8])], limit: Double) async -> Ending {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: drive(port: port, chunks: chunks, limit: limit)) }.start()
        }
    }

    /// Sends `text` at once, as is (clients refuse to send malformed requests), and answers all the
    /// server sent until it closed the connection (or `limit` passed).
    public static func exchange(port: Int, _ text: String, limit: Double = 10) async -> String {
        String(decoding: await run(port: port, sending: [(0, Array(text.utf8))], limit: limit).received, as: UTF8.self)
    }

    private static func drive(port: Int, chunks: [(delay: Double, bytes: [UInt8])], limit: Double) -> Ending {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return Ending(closedAfter: 0, received: []) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return Ending(closedAfter: 0, received: []) }
        let start = Date()
        var received: [UInt8] = []
        var pending = chunks[...]
        var nextAt = pending.first.map { $0.delay } ?? .infinity
        while true {
            let elapsed = Date().timeIntervalSince(start)
            if elapsed >= limit { return Ending(closedAfter: nil, received: received) }
            if let chunk = pending.first, elapsed >= nextAt {
                pending = pending.dropFirst()
                nextAt = elapsed + (pending.first?.delay ?? .infinity)
                var offset = 0
                while offset < chunk.bytes.count {
                    let sent = chunk.bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    // The server may answer and close before it has read everything sent.
                    guard sent > 0 else { break }
                    offset += sent
                }
            }
            // Wait for data or a close until the next chunk is due (at most 50 ms at a time).
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let wait = max(0, min(nextAt, limit) - Date().timeIntervalSince(start))
            let ready = poll(&poller, 1, Int32(min(wait, 0.05) * 1000))
            guard ready > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return Ending(closedAfter: Date().timeIntervalSince(start), received: received) }
            received += buffer[..<count]
        }
    }
}
