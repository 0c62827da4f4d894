import Foundation
import Hummingbird

/// Serves the OpenAPI 3.1 document of every public endpoint, written in JSON (which is YAML
/// too), at `/openapi.yaml` and `/openapi.json`. A test keeps it true to the router and to
/// real answers.
struct OpenAPIController {
    /// The document's bytes, read once: from the resources SwiftPM puts beside the executable,
    /// else from the source tree. (Not `Bundle.module`, which stops the process when the
    /// resources were not copied along with the binary.)
    static let document: Data? = {
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath().deletingLastPathComponent()
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent("NotifiableServer_NotifiableApp.resources/openapi.json"),
            executable.appendingPathComponent("NotifiableServer_NotifiableApp.resources/openapi.json"),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("openapi.json"),
        ]
        return candidates.lazy.compactMap { try? Data(contentsOf: $0) }.first
    }()

    func addRoutes(to router: Router<NotifiableRequestContext>) {
        router.get("openapi.yaml") { _, _ in try Self.answer(contentType: "application/yaml; charset=utf-8") }
        router.get("openapi.json") { _, _ in try Self.answer(contentType: "application/json; charset=utf-8") }
    }

    private static func answer(contentType: String) throws -> Response {
        guard let document else {
            throw APIError(status: .notFound, code: "not_found", message: "This build carries no OpenAPI document.")
        }
        return Response(status: .ok, headers: [.contentType: contentType], body: .init(byteBuffer: ByteBuffer(bytes: document)))
    }
}
