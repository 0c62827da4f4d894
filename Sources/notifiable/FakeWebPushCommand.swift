import ArgumentParser
import Foundation
import Logging
import NotifiableSandbox

struct FakeWebPush: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fake-webpush",
        abstract: "Run a fake browser push service (RFC 8030; HTTPS, self-signed) for trials and benchmarks.",
        discussion: """
            Prints the base URL, then serves POST /push/<subscription> as a push service does until SIGINT or SIGTERM: \
            the VAPID token must verify and name this origin, TTL and aes128gcm are required, 201 with a Location \
            answers a message taken. Any subscription id is taken (the message is counted, not opened). Point the \
            service at it with NOTIFIABLE_WEBPUSH_ALLOWED_HOSTS=<host> and NOTIFIABLE_WEBPUSH_CA_FILE=<--certificate-out>. \
            --fault injects a seeded share of failures (unregistered answers 410); --stats-out and --request-log tell \
            another process what it saw.
            """
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0 picks a free port).") var port = 8443
    @OptionGroup var options: FakeGatewayOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535.") }
        guard options.failureRate == 0 else { throw ValidationError("--failure-rate: use --fault unavailable=SHARE here.") }
    }

    func run() async throws {
        _ = bootstrapLogging(level: options.level)
        var logger = Logger(label: "notifiable.fake-webpush")
        logger.logLevel = options.level
        let gateway = try await SandboxWebPushGateway.start(host: host, port: port, threads: options.threadCount, logger: logger)
        try await options.serve(
            gateway, logger: logger, prepare: {}, announce: gateway.baseURL,
            summary: { "fake-webpush: \(gateway.requestCount) requests, \(gateway.acceptedCount) accepted" })
    }
}
