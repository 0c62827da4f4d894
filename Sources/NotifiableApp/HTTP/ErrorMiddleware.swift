import Hummingbird
import NIOCore
import NotifiableCore
import NotifiableStore

/// Outermost middleware: every failure leaves as a JSON error. Errors the service does not
/// know are logged in full and answered with a plain 500 that reveals nothing.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let answer: APIError
        do {
            return try await next(request, context)
        } catch let error as APIError {
            answer = error
        } catch let page as ConsoleRefusal {
            // The console's refusals are pages for a person, not JSON for a program.
            return try page.response(from: request, context: context)
        } catch let error as ValidationError {
            answer = APIError.validation(error)
        } catch is NIOTooManyBytesError {
            answer = APIError.bodyTooLarge
        } catch let error as HTTPError {
            answer = Self.translate(error)
        } catch  where isDatabaseUnavailable(error) {
            context.logger.warning(
                "request failed: the database is unreachable",
                metadata: [
                    "error": "\(databaseErrorText(error))", "method": "\(request.method)", "path": "\(request.uri.path)",
                ])
            answer = APIError.databaseUnavailable
        } catch  where isMissingReference(error) {
            context.logger.info(
                "request refers to a row deleted meanwhile",
                metadata: [
                    "error": "\(databaseErrorText(error))", "method": "\(request.method)", "path": "\(request.uri.path)",
                ])
            answer = APIError.notFound("What this request refers to no longer exists; it was deleted meanwhile.")
        } catch {
            context.logger.error(
                "request failed",
                metadata: [
                    "error": "\(String(reflecting: error))", "method": "\(request.method)", "path": "\(request.uri.path)",
                ])
            answer = APIError.internalError
        }
        context.logFacts.errorCode = answer.code
        return try answer.response(from: request, context: context)
    }

    /// The status `handle` answers an error with, for those who record answers (the audit log).
    static func status(of error: any Error) -> HTTPResponse.Status {
        switch error {
        case let error as any HTTPResponseError: return error.status
        case let error as ValidationError: return APIError.validation(error).status
        case is NIOTooManyBytesError: return APIError.bodyTooLarge.status
        case _ where isDatabaseUnavailable(error): return APIError.databaseUnavailable.status
        case _ where isMissingReference(error): return .notFound
        default: return .internalServerError
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
