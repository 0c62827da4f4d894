import ArgumentParser
import Dispatch
import Foundation
import Logging
import NotifiableSandbox

struct FakeAPNs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fake-apns",
        abstract: "Run a fake APNs gateway (HTTP/2 over TLS with a self-signed certificate) for trials and benchmarks.",
        discussion: """
            Prints the base URL, then serves POST /3/device/<token> as APNs does until SIGINT or SIGTERM. \
            Provider tokens are valid when signed by a key given with --trust. Accepted pushes are counted, not kept; \
            the counts are printed on exit. --fault injects a seeded share of failures; --stats-out and --request-log \
            tell another process what the gateway saw.
            """
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0 picks a free port).") var port = 2197
    @Option(
        name: .customLong("trust"),
        help: ArgumentHelp(
            "A signing key whose provider tokens are valid (repeatable).", valueName: "TEAM_ID:KEY_ID:PATH_TO_PUBLIC_KEY_PEM"
        )
    )
    var trusted: [String] = []
    @Option(help: ArgumentHelp("Write the self-signed certificate (PEM) here for clients to trust.", valueName: "PATH"))
    var certificateOut: String?
    @Option(help: ArgumentHelp("Wait this long before every answer.", valueName: "N")) var latencyMs = 0
    @Option(help: ArgumentHelp("Share of valid pushes answered 503 ServiceUnavailable, 0 to 1.", valueName: "R"))
    var failureRate = 0.0
    @Option(help: ArgumentHelp("Seed of the random failures (same seed, same failures).", valueName: "S")) var seed: UInt64 = 0
    @Option(help: "Accept only this apns-topic (repeatable; default: any topic).") var topic: [String] = []
    @OptionGroup var observation: SandboxGatewayFaultOptions
    @Option(help: "Event loop threads (default: one per core).") var threads: Int?
    @Option(help: "Log level (debug logs each rejection).") var logLevel = "info"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535.") }
        guard latencyMs >= 0 else { throw ValidationError("--latency-ms must not be negative.") }
        guard (0...1).contains(failureRate) else { throw ValidationError("--failure-rate must be between 0 and 1.") }
        guard Logger.Level(rawValue: logLevel.lowercased()) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical.")
        }
        for entry in trusted { _ = try Self.parseTrust(entry) }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel.lowercased()) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "notifiable.fake-apns")
        logger.logLevel = level

        let keys = try trusted.map(Self.parseTrust)
        let gateway = try await SandboxAPNsGateway.start(
            host: host, port: port, threads: threads ?? ProcessInfo.processInfo.activeProcessorCount, logger: logger
        )
        gateway.setRecording(false)
        if !topic.isEmpty { gateway.allowTopics(Set(topic)) }
        if latencyMs > 0 { gateway.setLatency(.milliseconds(latencyMs)) }
        if failureRate > 0 { gateway.setRandomFailures(rate: failureRate, seed: seed, outcome: .serviceUnavailable) }
        gateway.setFaults(try observation.mix(seed: seed))
        gateway.setObserving(statistics: observation.statsOut != nil, requestLog: observation.requestLog != nil)
        var writer: Task<Void, Never>?
        do {
            if observation.observes {
                let files = try SandboxGatewayStatsFiles(statsPath: observation.statsOut, requestLogPath: observation.requestLog)
                writer = observation.keepWriting(files) { (gateway.stats, gateway.drainRequestLog()) }
            }
            for key in keys { try gateway.trust(teamID: key.teamID, keyID: key.keyID, pem: key.pem) }
            if let certificateOut {
                try gateway.certificatePEM.write(toFile: certificateOut, atomically: true, encoding: .utf8)
            }
            if keys.isEmpty {
                FileHandle.standardError.write(Data("warning: no --trust key: every push will be refused with InvalidProviderToken.\n".utf8))
            }
            FileHandle.standardOutput.write(Data((gateway.baseURL + "\n").utf8))
            let signal = await Self.waitForTerminationSignal()
            logger.debug("fake APNs gateway stopping", metadata: ["signal": "\(signal)"])
        } catch {
            writer?.cancel()
            try? await gateway.stop()
            throw error
        }
        writer?.cancel()
        await writer?.value
        let requests = gateway.requestCount
        let accepted = gateway.acceptedCount
        try await gateway.stop()
        FileHandle.standardError.write(Data("fake-apns: \(requests) requests, \(accepted) accepted\n".utf8))
    }

    struct TrustedKey {
        var teamID: String
        var keyID: String
        var pem: String
    }

    /// Parses `TEAM_ID:KEY_ID:PATH`; the PEM may hold the public key or the private key (an APNs .p8 file).
    static func parseTrust(_ entry: String) throws -> TrustedKey {
        let parts = entry.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else {
            throw ValidationError("--trust takes TEAM_ID:KEY_ID:PATH_TO_PUBLIC_KEY_PEM, got \"\(entry)\".")
        }
        let pem: String
        do {
            pem = try String(contentsOfFile: parts[2], encoding: .utf8)
        } catch {
            throw CommandFailure("--trust: cannot read \(parts[2]): \(error.localizedDescription)")
        }
        do {
            _ = try SandboxAPNsGateway.publicKey(pem: pem)
        } catch {
            throw ValidationError("--trust: \(parts[2]) holds no P-256 public or private key in PEM form.")
        }
        return TrustedKey(teamID: parts[0], keyID: parts[1], pem: pem)
    }

    /// Waits for SIGINT or SIGTERM and returns which one came.
    static func waitForTerminationSignal() async -> Int32 {
        let signals: [Int32] = [SIGINT, SIGTERM]
        let stream = AsyncStream<Int32> { continuation in
            let sources = signals.map { number in
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { continuation.yield(number) }
                source.resume()
                return source
            }
            let box = SignalSources(sources)
            continuation.onTermination = { _ in box.cancel() }
        }
        for await number in stream { return number }
        return SIGTERM
    }
}

/// Keeps the signal sources alive until the wait ends.
private final class SignalSources: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(_ sources: [any DispatchSourceSignal]) {
        self.sources = sources
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
