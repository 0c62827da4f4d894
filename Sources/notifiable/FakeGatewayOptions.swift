import ArgumentParser
import Foundation
import Logging
import NotifiableSandbox

/// The options `fake-apns` and `fake-fcm` share: the certificate, latency, failures, observation,
/// threads and logging.
struct FakeGatewayOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Write the self-signed certificate (PEM) here for clients to trust.", valueName: "PATH"))
    var certificateOut: String?
    @Option(help: ArgumentHelp("Wait this long before every answer (FCM: every send answer).", valueName: "N")) var latencyMs = 0
    @Option(help: ArgumentHelp("Share of valid requests answered 503 (APNs ServiceUnavailable, FCM UNAVAILABLE), 0 to 1.", valueName: "R"))
    var failureRate = 0.0
    @Option(help: ArgumentHelp("Seed of the random failures and faults (same seed, same failures).", valueName: "S")) var seed: UInt64 = 0
    @Option(
        name: .customLong("fault"),
        help: ArgumentHelp(
            "Fail this share of valid requests this way (repeatable; shares add up to at most 1). NAME: unavailable "
                + "(503), unavailable:SECONDS (503 with retry-after), reset-stream (RST_STREAM), drop-connection "
                + "(close the TCP connection), unregistered (APNs 410, FCM 404 UNREGISTERED), timeout (never answer). "
                + "A token's n-th request gets the same draw in every run with the same --seed.",
            valueName: "NAME=SHARE"
        )
    )
    var faults: [String] = []
    @Option(
        help: ArgumentHelp("Write what the gateway saw here as JSON: requests per outcome, per signing key, tokens accepted more than once.", valueName: "PATH")
    )
    var statsOut: String?
    @Option(help: ArgumentHelp("Append every request here: arrival time, token, signing key, outcome, status, retry-after (tab-separated).", valueName: "PATH"))
    var requestLog: String?
    @Option(help: ArgumentHelp("How often --stats-out and --request-log are written (also on exit).", valueName: "N"))
    var statsIntervalMs = 250
    @Option(help: "Event loop threads (default: one per core).") var threads: Int?
    @Option(help: "Log level (debug logs each refusal).") var logLevel = "info"

    func validate() throws {
        guard latencyMs >= 0 else { throw ValidationError("--latency-ms must not be negative.") }
        guard (0...1).contains(failureRate) else { throw ValidationError("--failure-rate must be between 0 and 1.") }
        guard Logger.Level(rawValue: logLevel.lowercased()) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical.")
        }
        do {
            _ = try SandboxGatewayFaultMix.parse(faults, seed: 0)
        } catch {
            throw ValidationError("--fault: \(error)")
        }
        guard statsIntervalMs > 0 else { throw ValidationError("--stats-interval-ms must be positive.") }
    }

    var level: Logger.Level { Logger.Level(rawValue: logLevel.lowercased()) ?? .info }
    var threadCount: Int { threads ?? ProcessInfo.processInfo.activeProcessorCount }

    /// The mix drawn with `seed`, or nil when no --fault was given.
    func mix() throws -> SandboxGatewayFaultMix? {
        faults.isEmpty ? nil : try SandboxGatewayFaultMix.parse(faults, seed: seed)
    }

    var observes: Bool { statsOut != nil || requestLog != nil }

    /// Writes the files every interval until cancelled, then once more: the last write holds everything seen.
    func keepWriting(
        _ files: SandboxGatewayStatsFiles,
        snapshot: @escaping @Sendable () -> (SandboxGatewayStats, [SandboxGatewayRequestRecord])
    ) -> Task<Void, Never> {
        let interval = Duration.milliseconds(statsIntervalMs)
        return Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                let (stats, records) = snapshot()
                do {
                    try files.write(stats: stats, records: records)
                } catch {
                    FileHandle.standardError.write(Data("cannot write the gateway's statistics: \(error)\n".utf8))
                }
            }
            let (stats, records) = snapshot()
            try? files.write(stats: stats, records: records)
            files.close()
        }
    }

    /// Serves with a started gateway until SIGINT or SIGTERM: sets the shared knobs, runs `prepare`
    /// (trusting keys, writing files), writes the certificate, prints `announce`; on the signal,
    /// writes the statistics files a last time, prints `summary` to standard error (counted at
    /// the same moment, so the two agree) and stops the gateway. A failure on the way stops the
    /// gateway too.
    func serve(
        _ gateway: some SandboxGateway, logger: Logger, prepare: () throws -> Void, announce: String,
        summary: () -> String
    ) async throws {
        gateway.setRecording(false)
        if latencyMs > 0 { gateway.setLatency(.milliseconds(latencyMs)) }
        gateway.setFaults(try mix())
        gateway.setObserving(statistics: statsOut != nil, requestLog: requestLog != nil)
        var writer: Task<Void, Never>?
        do {
            if observes {
                let files = try SandboxGatewayStatsFiles(statsPath: statsOut, requestLogPath: requestLog)
                writer = keepWriting(files) { (gateway.stats, gateway.drainRequestLog()) }
            }
            try prepare()
            if let certificateOut {
                try gateway.certificatePEM.write(toFile: certificateOut, atomically: true, encoding: .utf8)
            }
            FileHandle.standardOutput.write(Data((announce + "\n").utf8))
            let signal = await waitForTerminationSignal()
            logger.debug("gateway stopping", metadata: ["signal": "\(signal)"])
        } catch {
            writer?.cancel()
            try? await gateway.stop()
            throw error
        }
        writer?.cancel()
        await writer?.value
        FileHandle.standardError.write(Data((summary() + "\n").utf8))
        try await gateway.stop()
    }
}
