import ArgumentParser
import Foundation
import NotifiableSandbox

/// The fault injection and observation options `fake-apns` and `fake-fcm` share.
struct SandboxGatewayFaultOptions: ParsableArguments {
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
    @Option(help: ArgumentHelp("Write what the gateway saw here as JSON: requests per outcome, per signing key, tokens accepted more than once.", valueName: "PATH"))
    var statsOut: String?
    @Option(help: ArgumentHelp("Append every request here: arrival time, token, signing key, outcome, status, retry-after (tab-separated).", valueName: "PATH"))
    var requestLog: String?
    @Option(help: ArgumentHelp("How often --stats-out and --request-log are written (also on exit).", valueName: "N"))
    var statsIntervalMs = 250

    func validate() throws {
        do {
            _ = try SandboxGatewayFaultMix.parse(faults, seed: 0)
        } catch {
            throw ValidationError("--fault: \(error)")
        }
        guard statsIntervalMs > 0 else { throw ValidationError("--stats-interval-ms must be positive.") }
    }

    /// The mix drawn with `seed`, or nil when no --fault was given.
    func mix(seed: UInt64) throws -> SandboxGatewayFaultMix? {
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
}
