import HTTPTypes
import Hummingbird

/// Lets web apps on the listed origins call the device API from the browser (CORS): a preflight
/// (`OPTIONS` with `Access-Control-Request-Method`) under `/api/v1/` is answered at once, and
/// answers to those origins name them in `Access-Control-Allow-Origin`. Requests stay signed with
/// the app's device credentials; no cookie is ever allowed (`credentials` mode is not granted).
struct BrowserOriginsMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext

    /// Origins as browsers send them (`https://app.example.com`, lower-case), or `*` for any.
    let origins: Set<String>

    static let allowedHeaders =
        "Authorization, Content-Type, X-Date, X-HMAC-Date, X-Authorization-Content-SHA256, Content-MD5, X-Notifiable-User-Token"
    /// What a page may read of an answer besides the simple headers: when to try again.
    static let exposedHeaders = "Retry-After"
    static let allowedMethods = "GET, POST, PUT, PATCH, DELETE"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin], origins.contains(origin) || origins.contains("*"),
            request.uri.path.hasPrefix("/api/v1/")
        else { return try await next(request, context) }
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            var headers = HTTPFields()
            headers[.accessControlAllowOrigin] = origin
            headers[.accessControlAllowMethods] = Self.allowedMethods
            headers[.accessControlAllowHeaders] = Self.allowedHeaders
            headers[.accessControlMaxAge] = "600"
            headers[.vary] = "Origin"
            return Response(status: .noContent, headers: headers)
        }
        var response = try await next(request, context)
        response.headers[.accessControlAllowOrigin] = origin
        response.headers[.accessControlExposeHeaders] = Self.exposedHeaders
        // Beside whatever the answer already varies by.
        response.headers.append(HTTPField(name: .vary, value: "Origin"))
        return response
    }
}
