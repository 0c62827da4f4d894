import Foundation
import Hummingbird
import NotifiableCore

/// An error answered as `{"error": {"code": …, "message": …, "field": …}}` with its status.
public struct APIError: Error, HTTPResponseError, Sendable {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    public let field: String?
    public var headers: HTTPFields = [:]

    public init(status: HTTPResponse.Status, code: String, message: String, field: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: jsonBody)))
    }

    var jsonBody: Data {
        struct Body: Encodable {
            struct Detail: Encodable {
                let code: String
                let message: String
                let field: String?
            }
            let error: Detail
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(Body(error: .init(code: code, message: message, field: field)))) ?? Data()
    }

    static func unauthorized(_ code: String, _ message: String) -> APIError {
        APIError(status: .unauthorized, code: code, message: message)
    }

    static func notFound(_ message: String) -> APIError {
        APIError(status: .notFound, code: "not_found", message: message)
    }

    static func validation(_ error: ValidationError) -> APIError {
        APIError(status: .unprocessableContent, code: error.code, message: error.message, field: error.field)
    }

    static var bodyTooLarge: APIError {
        APIError(
            status: .contentTooLarge, code: "body_too_large",
            message: "The request body is larger than this endpoint takes: \(NotifiableRequestContext.maxBodyBytes / 1024) KiB, "
                + "\(NotifiableRequestContext.maxBatchBodyBytes / 1024 / 1024) MiB for a batch of notifications, "
                + "or \(NotifiableRequestContext.maxRichContentBytes / 1024 / 1024) MiB for a rich notification's content."
        )
    }

    /// Too many failed sign-ins from this client of late (`SignInThrottle`).
    static func tooManyFailedAttempts(retryAfter seconds: Int) -> APIError {
        var error = APIError(
            status: .tooManyRequests, code: "too_many_failed_attempts",
            message: "Too many wrong tokens from this client; try again in \(seconds) s (Retry-After)."
        )
        error.headers[.retryAfter] = String(seconds)
        return error
    }

    /// The request was still running at the request deadline (a commit waiting on a synchronous
    /// standby that is gone, a lock held elsewhere). Its work may still complete.
    static func requestDeadlineExceeded(_ deadline: Duration) -> APIError {
        var error = APIError(
            status: .serviceUnavailable, code: "request_deadline_exceeded",
            message: "The request did not finish within \(deadline.components.seconds) s because the database is slow to commit. "
                + "It may still take effect: retry after the seconds in Retry-After (a notification with the same Idempotency-Key)."
        )
        error.headers[.retryAfter] = "5"
        return error
    }

    /// The database cannot be reached for now (restarting, failing over, out of connections).
    static var databaseUnavailable: APIError {
        var error = APIError(
            status: .serviceUnavailable, code: "database_unavailable",
            message: "The service cannot reach its database for a moment. Retry after the seconds in Retry-After."
        )
        error.headers[.retryAfter] = "1"
        return error
    }

    static var internalError: APIError {
        APIError(
            status: .internalServerError, code: "internal_error",
            message: "The server failed to answer this request. It has been logged; try again, and report it if it persists."
        )
    }
}
