import Foundation
import HTTPTypes
import Hummingbird
import NotifiableCore
import NotifiableStore

/// Verifies the Notifiable SDKs' APIAuth signature (CONTRACT §2) and records the caller.
///
/// The body is read here, once, because `Content-MD5` covers it; it is stored back on the
/// request for the handler.
struct APIAuthMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext

    let credentials: CredentialCache
    let now: @Sendable () -> Int64

    init(credentials: CredentialCache, now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }) {
        self.credentials = credentials
        self.now = now
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var request = request
        var context = context
        guard let header = request.headers[.authorization] else {
            throw APIError.unauthorized(
                "missing_authorization",
                "Sign the request: send Authorization: APIAuth <access_id>:<signature> (see the README)."
            )
        }
        guard let authorization = APIAuth.Authorization(header: header) else {
            throw APIError.unauthorized(
                "invalid_authorization",
                "The Authorization header must be \"APIAuth <access_id>:<signature>\" or \"APIAuth-HMAC-SHA256 <access_id>:<signature>\"."
            )
        }
        let date = try checkedDate(request.headers[.date])

        let contentMD5 = request.headers[.contentMD5] ?? ""

        guard Credential.isWellFormedAccessID(authorization.accessID),
              let credential = try await credentials.credential(accessID: authorization.accessID)
        else {
            throw APIError.unauthorized("unknown_access_id", "No app has the access id \"\(authorization.accessID)\".")
        }
        // The SDKs sign the path alone; other clients sign path and query. Either is accepted.
        let target = request.head.path ?? "/"
        let path = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target
        let signed = Set([path, target]).contains { uri in
            let canonical = APIAuth.canonicalString(
                method: request.method.rawValue, contentType: request.headers[.contentType] ?? "",
                contentMD5: contentMD5, requestURI: uri, date: date
            )
            let expected = APIAuth.signature(of: canonical, secretKey: credential.secretKey, algorithm: authorization.algorithm)
            return APIAuth.constantTimeEquals(expected, authorization.signature)
        }
        guard signed else {
            throw APIError.unauthorized(
                "invalid_signature",
                "The signature does not match. Sign \"METHOD,Content-Type,Content-MD5,path,Date\" with the secret key of access id \(authorization.accessID)."
            )
        }
        // The body is read once the caller is known, so only the app's backend can make the
        // server read a large upload.
        let limit = credential.role == .server ? Context.bodyLimit(for: request) : Context.maxBodyBytes
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw APIError.bodyTooLarge
        }
        let body = try await request.collectBody(upTo: limit)
        if !contentMD5.isEmpty, contentMD5 != APIAuth.contentMD5(of: body.readableBytesView) {
            throw APIError.unauthorized("content_md5_mismatch", "Content-MD5 does not match the body that arrived.")
        }
        context.caller = Caller(
            appID: credential.appID, role: credential.role, accessID: authorization.accessID,
            requiresVerifiedAlias: credential.requiresVerifiedAlias
        )
        context.logger[metadataKey: "app_id"] = "\(credential.appID)"
        return try await next(request, context)
    }

    /// The Date header's text, once it is known to be an RFC 1123 date within the allowed skew.
    private func checkedDate(_ header: String?) throws -> String {
        guard let header, !header.isEmpty else {
            throw APIError.unauthorized("missing_date", "Send a Date header (RFC 1123, e.g. \"\(HTTPDate.format(now()))\"); it is part of the signature.")
        }
        guard let seconds = HTTPDate.parse(header) else {
            throw APIError.unauthorized("invalid_date", "The Date header must be an RFC 1123 GMT date such as \"\(HTTPDate.format(now()))\".")
        }
        let skew = abs(seconds - now())
        guard skew <= APIAuth.allowedClockSkewSeconds else {
            throw APIError.unauthorized(
                "date_out_of_range",
                "The Date header is \(skew / 60) minutes from the server's clock (\(HTTPDate.format(now()))); at most \(APIAuth.allowedClockSkewSeconds / 60) are allowed. Check the client's clock."
            )
        }
        return header
    }
}

extension HTTPField.Name {
    static let contentMD5 = Self("Content-MD5")!
}
