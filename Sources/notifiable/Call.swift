import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore

struct Call: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send one signed request to a running server and print the answer.",
        discussion: """
        Example:
          notifiable call POST /api/v1/device_tokens --data '{"device_token": {"provider": "apns", "token": "…"}}'
        """
    )

    @Argument(help: "HTTP method, e.g. POST.") var method: String
    @Argument(help: "Request path, e.g. /api/v1/device_tokens.") var path: String
    @Option(help: "JSON body.") var data: String?
    @Option(help: "Server URL (default: NOTIFIABLE_URL or http://127.0.0.1:8080).") var url: String?
    @OptionGroup var signing: SigningOptions

    func run() async throws {
        let base = url ?? ProcessInfo.processInfo.environment["NOTIFIABLE_URL"] ?? "http://127.0.0.1:8080"
        let body = Data((data ?? "").utf8)
        let signPath = String(path.split(separator: "?", maxSplits: 1).first ?? "")
        var request = HTTPClientRequest(url: base + path)
        request.method = .init(rawValue: method.uppercased())
        for header in try signing.headers(method: method, path: signPath, body: body) {
            request.headers.add(name: header.name, value: header.value)
        }
        if !body.isEmpty { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let answer = try await response.body.collect(upTo: 16 * 1024 * 1024)
        print("HTTP \(response.status.code)")
        print(String(buffer: answer))
        if response.status.code >= 400 { throw ExitCode(1) }
    }
}
