import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NotifiableDelivery

/// `notifiable health`: asks a running server whether it is up, for container healthchecks
/// (the runtime image has no curl). Exits 0 when it answers 200, 1 otherwise.
struct Health: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check that the server on this machine answers (exit 0) or not (exit 1), for container healthchecks."
    )

    @Option(help: "The server's address (default: http://127.0.0.1:$PORT, PORT defaulting to 8080).") var url: String?
    @Flag(help: "Also require the database to answer (/health/ready instead of /health/live).") var ready = false
    @Option(help: "Seconds to wait for the answer.") var timeout: Int64 = 3

    func run() async throws {
        let port = ProcessInfo.processInfo.environment["PORT"].flatMap(Int.init) ?? 8080
        let base = url ?? "http://127.0.0.1:\(port)"
        let path = ready ? "/health/ready" : "/health/live"
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + path), timeout: .seconds(timeout))
        } catch {
            throw CommandFailure("\(base)\(path) did not answer: \(TransportFailure.reason(error, peer: "the server")).")
        }
        guard response.status.code == 200 else { throw CommandFailure("\(base)\(path) answered \(response.status.code).") }
        print("ok")
    }
}
