import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NotifiableCore
import NotifiableDelivery

struct Call: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send one signed request to a running server and print the answer.",
        discussion: """
            Examples:
              notifiable call POST /api/v1/device_tokens --data '{"device_token": {"provider": "apns", "token": "…"}}'
              notifiable call --as server --app-file app.json POST /api/v1/notifications --data '{…}' --get id
              notifiable call --admin GET /admin/queue
            """
    )

    @Argument(help: "HTTP method, e.g. POST.") var method: String
    @Argument(help: "Request path, e.g. /api/v1/device_tokens.") var path: String
    @Option(help: "JSON body.") var data: String?
    @Option(help: "Server URL (default: NOTIFIABLE_URL or http://127.0.0.1:8080).") var url: String?
    @Flag(help: "An admin request: Authorization: Bearer NOTIFIABLE_ADMIN_TOKEN instead of a signature.") var admin = false
    @Option(help: "Print only this top-level field of the JSON answer (e.g. id), for use in scripts.") var get: String?
    @Option(help: "Repeat the request (every 0.2 s, for up to --timeout seconds) until the answer contains this text.") var until: String?
    @Option(help: "Seconds --until waits at most.") var timeout: Double = 15
    @Flag(name: [.customShort("i"), .long], help: "Print the status line (HTTP 200) before the answer, as curl -i does; otherwise it goes to standard error.")
    var include = false
    @OptionGroup var signing: SigningOptions

    func run() async throws {
        let deadline = Date().addingTimeInterval(timeout)
        var (status, answer) = try await send()
        while let until, !answer.contains(until), status < 400, Date() < deadline {
            try await Task.sleep(for: .milliseconds(200))
            (status, answer) = try await send()
        }
        if let get {
            guard status < 400, let value = (try? JSONValue.decode(Array(answer.utf8)))?.objectValue?[get] else {
                FileHandle.standardError.write(Data("HTTP \(status)\n\(answer)\n".utf8))
                throw ExitCode(1)
            }
            if case .string(let text) = value { print(text) } else { print(String(decoding: try JSONEncoder().encode(value), as: UTF8.self)) }
        } else {
            // The answer alone on standard output, so it can be piped to jq.
            if include { print("HTTP \(status)") } else { FileHandle.standardError.write(Data("HTTP \(status)\n".utf8)) }
            print(answer)
        }
        if status >= 400 { throw ExitCode(1) }
        if let until, !answer.contains(until) {
            FileHandle.standardError.write(Data("The answer did not contain \(until) within \(timeout) s.\n".utf8))
            throw ExitCode(1)
        }
    }

    private func send() async throws -> (status: UInt, body: String) {
        let base = url ?? ProcessInfo.processInfo.environment["NOTIFIABLE_URL"] ?? "http://127.0.0.1:8080"
        let body = Data((data ?? "").utf8)
        let signPath = String(path.split(separator: "?", maxSplits: 1).first ?? "")
        var request = HTTPClientRequest(url: base + path)
        request.method = .init(rawValue: method.uppercased())
        if admin {
            guard let token = ProcessInfo.processInfo.environment["NOTIFIABLE_ADMIN_TOKEN"], !token.isEmpty else {
                throw ValidationError("--admin needs NOTIFIABLE_ADMIN_TOKEN set to the server's admin token.")
            }
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        } else {
            for header in try signing.headers(method: method, path: signPath, body: body) {
                request.headers.add(name: header.name, value: header.value)
            }
        }
        if !body.isEmpty { request.body = .bytes(ByteBuffer(bytes: body)) }
        do {
            let response = try await Self.client.execute(request, timeout: .seconds(30))
            let answer = try await response.body.collect(upTo: 16 * 1024 * 1024)
            return (response.status.code, String(buffer: answer))
        } catch {
            throw CommandFailure(
                "No answer from \(base): \(TransportFailure.reason(error, peer: "the server")). Is the server running there? "
                    + "Give its address with --url or NOTIFIABLE_URL."
            )
        }
    }

    /// Gives up connecting after 3 s: a server that is down is said at once, not after the request's 30 s.
    private static let client = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(timeout: .init(connect: .seconds(3)))
    )
}
