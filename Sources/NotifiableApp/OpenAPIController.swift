import Foundation
import Hummingbird

/// Serves the OpenAPI 3.1 document of every public endpoint, written in JSON (which is YAML
/// too), at `/openapi.yaml` and `/openapi.json`. A test keeps it true to the router and to
/// real answers.
struct OpenAPIController {
    /// The document's bytes, read once from the package's resources.
    static let document: Data? = Bundle.module.url(forResource: "openapi", withExtension: "json").flatMap { try? Data(contentsOf: $0) }

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
