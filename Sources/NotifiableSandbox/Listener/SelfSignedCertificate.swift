import Foundation
import Synchronization

/// Errors of the fake gateways.
public struct SandboxGatewayError: Error, CustomStringConvertible, Sendable {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// A self-signed EC P-256 certificate for `localhost` / `127.0.0.1`, made with the `openssl` command.
struct SelfSignedCertificate: Sendable {
    var certificatePEM: String
    var privateKeyPEM: String

    /// Certificates made in this process, by host: gateways started later (a test suite starts many) reuse them
    /// instead of running openssl again. Each is valid for 3 days, far longer than any test run or benchmark.
    private static let made = Mutex<[String: Task<SelfSignedCertificate, any Error>]>([:])

    /// A certificate for `localhost`, `127.0.0.1`, `::1` and `host`, made once per process and host
    /// (gateways starting at the same time wait for the same openssl run; a failed run is not kept).
    static func shared(for host: String) async throws -> SelfSignedCertificate {
        let task = made.withLock { made in
            if let task = made[host] { return task }
            let task = Task { try await make(extraHosts: [host]) }
            made[host] = task
            return task
        }
        do {
            return try await task.value
        } catch {
            made.withLock { made in
                if made[host] == task { made[host] = nil }
            }
            throw error
        }
    }

    static func make(commonName: String = "localhost", extraHosts: [String] = []) async throws -> SelfSignedCertificate {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("fake-gateway-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyURL = directory.appendingPathComponent("key.pem")
        let certificateURL = directory.appendingPathComponent("certificate.pem")

        var alternativeNames = ["IP:127.0.0.1", "IP:::1", "DNS:localhost"]
        for host in extraHosts where host != "127.0.0.1" && host != "::1" && host != "localhost" && host != "0.0.0.0" {
            let isAddress = host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
            alternativeNames.append(isAddress ? "IP:\(host)" : "DNS:\(host)")
        }
        let arguments = [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-days", "3", "-subj", "/CN=\(commonName)", "-addext", "subjectAltName=\(alternativeNames.joined(separator: ","))",
            "-keyout", keyURL.path, "-out", certificateURL.path,
        ]
        try await run(arguments)
        return SelfSignedCertificate(
            certificatePEM: try String(contentsOf: certificateURL, encoding: .utf8),
            privateKeyPEM: try String(contentsOf: keyURL, encoding: .utf8)
        )
    }

    private static func run(_ arguments: [String]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { process in
                continuation.resume(returning: process.terminationStatus)
            }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: SandboxGatewayError("Could not run openssl: \(error)"))
            }
        }
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard status == 0 else {
            throw SandboxGatewayError("openssl failed to make a self-signed certificate (status \(status)): \(message)")
        }
    }
}
