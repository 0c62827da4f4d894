import HTTPTypes
import Hummingbird

/// Headers every answer carries: no content sniffing (a JSON error or an uploaded file is never
/// run as a script or page), and no Referer sent from the dashboard's pages to anywhere.
struct SecurityHeadersMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.referrerPolicy] = "no-referrer"
        return response
    }
}

extension HTTPField.Name {
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}
