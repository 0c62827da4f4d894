import Foundation

/// The `notifiable` executable run as a child process, for tests that need real processes:
/// concurrent migrations, a worker killed mid-batch, memory of a worker under load.
public final class NotifiableProcess: @unchecked Sendable {
    private let process: Process

    /// The executable that scripts/test built (`NOTIFIABLE_BIN`), else the debug build.
    public static var executable: URL {
        if let path = ProcessInfo.processInfo.environment["NOTIFIABLE_BIN"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        return TestDatabase.migrationsDirectory.deletingLastPathComponent().appendingPathComponent(".build/debug/notifiable")
    }

    /// Starts `notifiable ARGUMENTS` with this process's environment plus `environment`.
    public init(_ arguments: [String], environment: [String: String] = [:], output: FileHandle? = FileHandle.nullDevice) throws {
        process = Process()
        process.executableURL = Self.executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = output
        process.standardError = output
        try process.run()
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var exitStatus: Int32 { process.terminationStatus }

    /// SIGKILL: the process gets no chance to finish anything.
    public func kill9() async {
        kill(process.processIdentifier, SIGKILL)
        await waitUntilExit()
    }

    /// SIGTERM, then waits for the process to exit.
    public func terminate() async {
        process.terminate()
        await waitUntilExit()
    }

    /// Waits on a thread of its own: a worker draining its batch can take seconds to exit, and
    /// blocking one of the few threads that run Swift tasks meanwhile stalls every other test.
    public func waitUntilExit() async {
        await withCheckedContinuation { continuation in
            Thread { [process] in
                process.waitUntilExit()
                continuation.resume()
            }.start()
        }
    }

    /// The most memory the process has held so far (VmHWM), in KiB; nil when unreadable.
    public func peakRSSKilobytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }
}

extension NotifiableProcess {
    /// Runs `notifiable ARGUMENTS` to the end; its exit status and everything it printed.
    /// `input`, when given, is the command's standard input.
    public static func run(_ arguments: [String], environment: [String: String] = [:], input: String? = nil) async throws -> (status: Int32, output: String) {
        try await runProgram(
            executable, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new }, input: input
        )
    }
}

/// Runs a program to its end: its exit status and everything it printed, standard output and error
/// together. The waiting happens on a thread of its own: blocking one of the few threads that run
/// Swift tasks (one per core) would stall every other test running meanwhile.
public func runProgram(
    _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, input: String? = nil
) async throws -> (status: Int32, output: String) {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            do {
                let process = Process()
                process.executableURL = executable
                process.arguments = arguments
                if let environment { process.environment = environment }
                let output = Pipe()
                process.standardOutput = output
                process.standardError = output
                let stdin = input.map { _ in Pipe() }
                if let stdin { process.standardInput = stdin }
                try process.run()
                if let stdin, let input {
                    try stdin.fileHandleForWriting.write(contentsOf: Data(input.utf8))
                    try stdin.fileHandleForWriting.close()
                }
                try output.fileHandleForWriting.close()
                let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                continuation.resume(returning: (process.terminationStatus, text))
            } catch {
                continuation.resume(throwing: error)
            }
        }.start()
    }
}
