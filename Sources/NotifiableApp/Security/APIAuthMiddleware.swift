import Foundation
import HTTPTypes
import Hummingbird
import NotifiableCore
import NotifiableStore

/// Verifies the Notifiable SDKs' APIAuth signature (CONTRACT §2, §6) and records the caller.
///
/// The body is read here, once, because `X-Authorization-Content-SHA256` or `Content-MD5` covers
/// it; it is stored back on the request for the handler. A server credential's POST, PUT or PATCH
/// must cover its body with one of them: signed without its body, one captured request would let
/// anyone send any body to that path until its Date is too old.
struct APIAuthMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext

    let credentials: CredentialCache
    /// Where accepted requests are remembered, to refuse them again; nil checks none.
    let seen: SeenRequestStore?
    let now: @Sendable () -> Int64

    init(credentials: CredentialCache, seen: SeenRequestStore?, now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }) {
        self.credentials = credentials
        self.seen = seen
        self.now = now
    }

    /// Each body hash header's name, made once rather than on every request.
    static let bodyHashHeaders = APIAuth.BodyHash.allCases.map { ($0, HTTPField.Name($0.headerName)!) }
    static let hmacDate = HTTPField.Name("X-HMAC-Date")!
    static let xDate = HTTPField.Name("X-Date")!

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
        // Browsers may not set Date (a forbidden header name for fetch): as the api_auth gem's
        // request drivers do, X-HMAC-Date and X-Date stand in for it, in that order.
        let dateHeader = [(Self.hmacDate, "X-HMAC-Date"), (Self.xDate, "X-Date"), (HTTPField.Name.date, "Date")]
            .first { request.headers[$0.0] != nil }
        let (date, dateSeconds) = try checkedDate(dateHeader.flatMap { request.headers[$0.0] }, named: dateHeader?.1 ?? "Date")

        // Each body hash header present, with its value; the first stands in the signature.
        let bodyHashes = Self.bodyHashHeaders.compactMap { hash, name in request.headers[name].map { (hash, $0) } }
        let contentHash = bodyHashes.first?.1 ?? ""

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
                contentHash: contentHash, requestURI: uri, date: date
            )
            let expected = APIAuth.signature(of: canonical, secretKey: credential.secretKey, algorithm: authorization.algorithm)
            return APIAuth.constantTimeEquals(expected, authorization.signature)
        }
        guard signed else {
            throw APIError.unauthorized(
                "invalid_signature",
                "The signature does not match. Sign \"METHOD,Content-Type,X-Authorization-Content-SHA256 (or Content-MD5, or nothing),path,Date\" "
                    + "with the secret key of access id \(authorization.accessID)."
            )
        }
        if credential.role == .server, bodyHashes.isEmpty, APIAuth.methodsWithBody.contains(request.method.rawValue) {
            throw APIError.unauthorized(
                "body_not_signed",
                "Server credentials must sign the body of a \(request.method.rawValue): send X-Authorization-Content-SHA256 "
                    + "(base64 of the body's SHA-256, as the api_auth gem 2.5 and later do) or Content-MD5, and sign its value in "
                    + "place of the empty field: \"METHOD,Content-Type,<hash>,path,Date\"."
            )
        }
        // The body is read once the caller is known, so only the app's backend can make the
        // server read a large upload.
        let limit = credential.role == .server ? Context.bodyLimit(for: request) : Context.maxBodyBytes
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw APIError.bodyTooLarge
        }
        let body = try await request.collectBody(upTo: limit)
        for (hash, value) in bodyHashes where value != hash.value(of: body.readableBytesView) {
            throw APIError.unauthorized(
                hash == .md5 ? "content_md5_mismatch" : "content_hash_mismatch", "\(hash.headerName) does not match the body that arrived."
            )
        }
        context.caller = Caller(
            appID: credential.appID, role: credential.role, accessID: authorization.accessID,
            requiresVerifiedAlias: credential.requiresVerifiedAlias
        )
        context.logger[metadataKey: "app_id"] = .stringConvertible(credential.appID)
        context.logFacts.appID = credential.appID
        // Last, once everything else holds: a request refused above did nothing, and its sender
        // may correct it and send it again.
        guard let seen, SignedRequestDigest.isChecked(method: request.method.rawValue, role: credential.role) else {
            return try await next(request, context)
        }
        let digest = SignedRequestDigest.of(accessID: authorization.accessID, algorithm: authorization.algorithm, signature: authorization.signature)
        let until = Date(timeIntervalSince1970: TimeInterval(dateSeconds + APIAuth.allowedClockSkewSeconds))
        guard try await seen.admit(digest, until: until) else {
            throw APIError.unauthorized(
                "replayed_request",
                "This exact request, with this signature, was already received. To send it again, sign it again (a new Date gives a new signature)."
            )
        }
        // An answer that asks the client to come back (429, 5xx) did nothing it must not repeat, and
        // a client's retry middleware may resend the very same signed request: it is forgotten.
        do {
            let response = try await next(request, context)
            if Self.invitesRetry(response.status) { await seen.forget(digest, logger: context.logger) }
            return response
        } catch {
            if Self.invitesRetry(ErrorMiddleware.status(of: error)) { await seen.forget(digest, logger: context.logger) }
            throw error
        }
    }

    static func invitesRetry(_ status: HTTPResponse.Status) -> Bool {
        status == .tooManyRequests || status.code >= 500
    }

    /// The date header's text and its seconds since 1970, once it is known to be an RFC 1123 date
    /// within the allowed skew; `name` is the header it came in, for the refusal's words.
    private func checkedDate(_ header: String?, named name: String) throws -> (String, Int64) {
        guard let header, !header.isEmpty else {
            throw APIError.unauthorized(
                "missing_date", "Send a Date header (RFC 1123, e.g. \"\(HTTPDate.format(now()))\"), or X-Date from a browser; it is part of the signature.")
        }
        guard let seconds = HTTPDate.parse(header) else {
            throw APIError.unauthorized("invalid_date", "The \(name) header must be an RFC 1123 GMT date such as \"\(HTTPDate.format(now()))\".")
        }
        let skew = abs(seconds - now())
        guard skew <= APIAuth.allowedClockSkewSeconds else {
            throw APIError.unauthorized(
                "date_out_of_range",
                "The \(name) header is \(skew / 60) minutes from the server's clock (\(HTTPDate.format(now()))); at most \(APIAuth.allowedClockSkewSeconds / 60) are allowed. Check the client's clock."
            )
        }
        return (header, seconds)
    }
}
