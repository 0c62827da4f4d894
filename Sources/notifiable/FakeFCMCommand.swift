import ArgumentParser
import Foundation
import Logging
import NotifiableSandbox

struct FakeFCM: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fake-fcm",
        abstract: "Run a fake FCM HTTP v1 API with its OAuth 2 token endpoint (HTTPS, self-signed) for trials and benchmarks.",
        discussion: """
            Prints the base URL and the token URI, then serves POST /token (service account JWT-bearer grant) and \
            POST /v1/projects/<project>/messages:send as Google does until SIGINT or SIGTERM. Service accounts given \
            with --trust, or written with --service-account-out, get access tokens; each token sends to its account's \
            project. Accepted messages are counted, not kept; the counts are printed on exit. --fault injects a seeded share \
            of failures; --stats-out and --request-log tell another process what the gateway saw.
            """
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0 picks a free port).") var port = 4443
    @Option(help: "Firebase project of the service account --service-account-out writes.") var project = "demo-project"
    @Option(
        help: ArgumentHelp(
            "Write a new service account key file the gateway trusts (its token_uri points here).", valueName: "PATH"
        )
    )
    var serviceAccountOut: String?
    @Option(
        name: .customLong("trust"),
        help: ArgumentHelp("A service account key file whose key is trusted (repeatable).", valueName: "PATH")
    )
    var trusted: [String] = []
    @Option(help: ArgumentHelp("Write the self-signed certificate (PEM) here for clients to trust.", valueName: "PATH"))
    var certificateOut: String?
    @Option(help: ArgumentHelp("Wait this long before every send answer.", valueName: "N")) var latencyMs = 0
    @Option(help: ArgumentHelp("Share of valid sends answered 503 UNAVAILABLE, 0 to 1.", valueName: "R"))
    var failureRate = 0.0
    @Option(help: ArgumentHelp("Seed of the random failures (same seed, same failures).", valueName: "S")) var seed: UInt64 = 0
    @OptionGroup var observation: SandboxGatewayFaultOptions
    @Option(help: "Event loop threads (default: one per core).") var threads: Int?
    @Option(help: "Log level (debug logs each refusal).") var logLevel = "info"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535.") }
        guard !project.isEmpty, !project.contains("/") else { throw ValidationError("--project must be a project id.") }
        guard latencyMs >= 0 else { throw ValidationError("--latency-ms must not be negative.") }
        guard (0...1).contains(failureRate) else { throw ValidationError("--failure-rate must be between 0 and 1.") }
        guard Logger.Level(rawValue: logLevel.lowercased()) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical.")
        }
        for path in trusted { _ = try Self.readTrusted(path) }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel.lowercased()) ?? .info
        _ = bootstrapLogging(level: level)
        var logger = Logger(label: "notifiable.fake-fcm")
        logger.logLevel = level

        let accounts = try trusted.map(Self.readTrusted)
        let gateway = try await SandboxFCMGateway.start(
            host: host, port: port, threads: threads ?? ProcessInfo.processInfo.activeProcessorCount, logger: logger
        )
        gateway.setRecording(false)
        if latencyMs > 0 { gateway.setLatency(.milliseconds(latencyMs)) }
        if failureRate > 0 { gateway.setRandomFailures(rate: failureRate, seed: seed, outcome: .unavailable()) }
        gateway.setFaults(try observation.mix(seed: seed))
        gateway.setObserving(statistics: observation.statsOut != nil, requestLog: observation.requestLog != nil)
        var writer: Task<Void, Never>?
        do {
            if observation.observes {
                let files = try SandboxGatewayStatsFiles(statsPath: observation.statsOut, requestLogPath: observation.requestLog)
                writer = observation.keepWriting(files) { (gateway.stats, gateway.drainRequestLog()) }
            }
            for account in accounts { try gateway.trust(serviceAccountJSON: account) }
            if let serviceAccountOut {
                let json = try gateway.makeServiceAccount(projectID: project)
                // The file holds a private key: readable by its owner only.
                let written = FileManager.default.createFile(
                    atPath: serviceAccountOut, contents: Data(json.utf8), attributes: [.posixPermissions: 0o600]
                )
                guard written else { throw CommandFailure("--service-account-out: cannot write \(serviceAccountOut).") }
            }
            if let certificateOut {
                try gateway.certificatePEM.write(toFile: certificateOut, atomically: true, encoding: .utf8)
            }
            if accounts.isEmpty && serviceAccountOut == nil {
                FileHandle.standardError.write(
                    Data("warning: no --trust or --service-account-out: every token request will be refused.\n".utf8)
                )
            }
            FileHandle.standardOutput.write(Data("\(gateway.baseURL)\ntoken_uri: \(gateway.tokenURI)\n".utf8))
            let signal = await FakeAPNs.waitForTerminationSignal()
            logger.debug("fake FCM gateway stopping", metadata: ["signal": "\(signal)"])
        } catch {
            writer?.cancel()
            try? await gateway.stop()
            throw error
        }
        writer?.cancel()
        await writer?.value
        let tokens = gateway.tokensIssued
        let sends = gateway.sendRequestCount
        let accepted = gateway.acceptedCount
        try await gateway.stop()
        FileHandle.standardError.write(
            Data("fake-fcm: \(tokens) access tokens issued, \(sends) send requests, \(accepted) accepted\n".utf8)
        )
    }

    /// Reads a service account key file given with --trust, refusing one the gateway could not trust.
    static func readTrusted(_ path: String) throws -> String {
        let json: String
        do {
            json = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw CommandFailure("--trust: cannot read \(path): \(error.localizedDescription)")
        }
        do {
            _ = try SandboxFCMGateway.serviceAccountClientEmail(json: json)
        } catch {
            throw ValidationError("--trust: \(path): \(error)")
        }
        return json
    }
}
