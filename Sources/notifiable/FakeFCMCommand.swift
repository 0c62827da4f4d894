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
    @OptionGroup var options: FakeGatewayOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535.") }
        guard !project.isEmpty, !project.contains("/") else { throw ValidationError("--project must be a project id.") }
        for path in trusted { _ = try Self.readTrusted(path) }
    }

    func run() async throws {
        _ = bootstrapLogging(level: options.level)
        var logger = Logger(label: "notifiable.fake-fcm")
        logger.logLevel = options.level

        let accounts = try trusted.map(Self.readTrusted)
        let gateway = try await SandboxFCMGateway.start(host: host, port: port, threads: options.threadCount, logger: logger)
        if options.failureRate > 0 { gateway.setRandomFailures(rate: options.failureRate, seed: options.seed, outcome: .unavailable()) }
        try await options.serve(
            gateway, logger: logger,
            prepare: {
                for account in accounts { try gateway.trust(serviceAccountJSON: account) }
                if let serviceAccountOut {
                    let json = try gateway.makeServiceAccount(projectID: project)
                    // The file holds a private key: readable by its owner only.
                    let written = FileManager.default.createFile(
                        atPath: serviceAccountOut, contents: Data(json.utf8), attributes: [.posixPermissions: 0o600]
                    )
                    guard written else { throw CommandFailure("--service-account-out: cannot write \(serviceAccountOut).") }
                }
                if accounts.isEmpty && serviceAccountOut == nil {
                    FileHandle.standardError.write(
                        Data("warning: no --trust or --service-account-out: every token request will be refused.\n".utf8)
                    )
                }
            }, announce: "\(gateway.baseURL)\ntoken_uri: \(gateway.tokenURI)",
            summary: {
                "fake-fcm: \(gateway.tokensIssued) access tokens issued, \(gateway.sendRequestCount) send requests, "
                    + "\(gateway.acceptedCount) accepted"
            })
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
