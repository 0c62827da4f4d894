import Hummingbird
import NIOCore
import NotifiableCore
import NotifiableStore

/// Outermost middleware: every failure leaves as a JSON error. Errors the service does not
/// know are logged in full and answered with a plain 500 that reveals nothing.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return try error.response(from: request, context: context)
        } catch let error as ValidationError {
            return try APIError.validation(error).response(from: request, context: context)
        } catch is NIOTooManyBytesError {
            return try APIError.bodyTooLarge.response(from: request, context: context)
        } catch let error as HTTPError {
            return try Self.translate(error).response(from: request, context: context)
        } catch where isDatabaseUnavailable(error) {
            context.logger.warning("request failed: the database is unreachable", metadata: [
                "error": "\(databaseErrorText(error))", "method": "\(request.method)", "path": "\(request.uri.path)",
            ])
            return try APIError.databaseUnavailable.response(from: request, context: context)
        } catch where isMissingReference(error) {
            context.logger.info("request refers to a row deleted meanwhile", metadata: [
                "error": "\(databaseErrorText(error))", "method": "\(request.method)", "path": "\(request.uri.path)",
            ])
            return try APIError.notFound("What this request refers to no longer exists; it was deleted meanwhile.")
                .response(from: request, context: context)
        } catch {
            context.logger.error("request failed", metadata: [
                "error": "\(String(reflecting: error))", "method": "\(request.method)", "path": "\(request.uri.path)",
            ])
            return try APIError.internalError.response(from: request, context: context)
        }
    }

    /// Hummingbird's own errors (no such route, wrong method, …) in the service's JSON form.
    static func translate(_ error: HTTPError) -> APIError {
        let code: String
        let message: String
        switch error.status {
        case .notFound:
            code = "not_found"
            message = "There is no such endpoint; see the README for the API."
        case .methodNotAllowed:
            code = "method_not_allowed"
            message = "This endpoint does not take that method."
        case .contentTooLarge:
            return APIError.bodyTooLarge
        default:
            code = error.status.reasonPhrase.lowercased().replacingOccurrences(of: " ", with: "_")
            message = error.body ?? error.status.reasonPhrase
        }
        var translated = APIError(status: error.status, code: code, message: message)
        translated.headers = error.headers
        return translated
    }
}
