import ArgumentParser
import Foundation
import Hummingbird
import NotifiableApp

/// Serves `POST /api/v1/device_tokens` with everything but the database, so that `scripts/bench`
/// can measure what the HTTP layer, the body decoding and the signature check allow on this
/// machine, in the same build as the service it compares with. Nothing is stored.
struct BenchRegistrationCeiling: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-registration-ceiling",
        abstract: "Benchmark only: the device registration route without the database (stores nothing).",
        shouldDisplay: false
    )

    @Option(help: "Port to listen on (127.0.0.1).") var port: Int
    @Option(help: "The one access id accepted.") var accessID: String
    @Option(help: "Its secret key.") var secretKey: String

    func run() async throws {
        let logger = bootstrapLogging(level: .error)
        FileHandle.standardError.write(Data("bench-registration-ceiling: a benchmark server that stores nothing; never point an app at it\n".utf8))
        let app = buildRegistrationCeilingApplication(
            host: "127.0.0.1", port: port, accessID: accessID, secretKey: secretKey, logger: logger
        )
        try await app.runService()
    }
}
