import ArgumentParser
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
    @Option(help: "Accept only this apns-topic (repeatable; default: any topic).") var topic: [String] = []
    @OptionGroup var options: FakeGatewayOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535.") }
        for entry in trusted { _ = try Self.parseTrust(entry) }
    }

    func run() async throws {
        _ = bootstrapLogging(level: options.level)
        var logger = Logger(label: "notifiable.fake-apns")
        logger.logLevel = options.level

        let keys = try trusted.map(Self.parseTrust)
        let gateway = try await SandboxAPNsGateway.start(host: host, port: port, threads: options.threadCount, logger: logger)
        if !topic.isEmpty { gateway.allowTopics(Set(topic)) }
        if options.failureRate > 0 { gateway.setRandomFailures(rate: options.failureRate, seed: options.seed, outcome: .serviceUnavailable) }
        try await options.serve(
            gateway, logger: logger,
            prepare: {
                for key in keys { try gateway.trust(teamID: key.teamID, keyID: key.keyID, pem: key.pem) }
                if keys.isEmpty {
                    FileHandle.standardError.write(Data("warning: no --trust key: every push will be refused with InvalidProviderToken.\n".utf8))
                }
            }, announce: gateway.baseURL,
            summary: { "fake-apns: \(gateway.requestCount) requests, \(gateway.acceptedCount) accepted" })
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
}
