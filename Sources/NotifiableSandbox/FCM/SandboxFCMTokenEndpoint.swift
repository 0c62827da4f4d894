import Foundation
import NotifiableCore

/// `POST /token`: Google's OAuth 2 token endpoint for the JWT-bearer grant of service accounts.
extension SandboxFCMRules {
    static let jwtBearerGrantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    func decideToken(_ request: SandboxHTTPRequest, now: Date) -> SandboxHTTPDecision {
        let (latency, accounts, audience) = state.withLock { state in
            state.tokenRequestCount += 1
            return (state.tokenLatency, state.accounts, state.tokenURI)
        }

        func refuse(status: Int = 400, _ error: String, _ description: String) -> SandboxHTTPDecision {
            let body = GoogleErrorBody.oauthError(error, description: description)
            return .answer(SandboxHTTPReply(status: status, body: body, headers: Self.noStore), after: latency)
        }

        guard request.method == "POST" else {
            return refuse(status: 405, "invalid_request", "The token endpoint takes POST, not \(request.method).")
        }
        guard !request.isBodyTooLarge else {
            return refuse("invalid_request", "The request body is larger than \(SandboxHTTPRequest.maxBodyBytes) bytes.")
        }
        let form = Self.parameters(of: request)
        guard let grantType = form["grant_type"], !grantType.isEmpty else {
            return refuse("invalid_request", "Missing required parameter: grant_type")
        }
        guard grantType == Self.jwtBearerGrantType else {
            return refuse("unsupported_grant_type", "Invalid grant_type: \(grantType)")
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            return refuse("invalid_request", "Missing required parameter: assertion")
        }
        let verified: ServiceAccountAssertion.Verified
        switch ServiceAccountAssertion.verify(assertion, accounts: accounts, audience: audience, now: now) {
        case .failure(let refusal): return refuse(refusal.error, refusal.description)
        case .success(let success): verified = success
        }

        let accessToken = Self.newAccessToken()
        let lifetime = state.withLock { state in
            if state.accessTokens.count >= Self.sweepAccessTokensAbove {
                state.accessTokens = state.accessTokens.filter { $0.value.expiresAt > now }
            }
            state.accessTokens[accessToken] = AccessToken(
                clientEmail: verified.clientEmail, projectID: verified.projectID,
                expiresAt: now.addingTimeInterval(TimeInterval(state.accessTokenLifetimeSeconds))
            )
            state.tokensIssued += 1
            return state.accessTokenLifetimeSeconds
        }
        let body = JSONText.object([
            ("access_token", JSONText.quoted(accessToken)), ("expires_in", String(lifetime)),
            ("token_type", JSONText.quoted("Bearer")),
        ])
        return .answer(SandboxHTTPReply(status: 200, body: body, headers: Self.noStore), after: latency)
    }

    /// Token answers must not be cached (RFC 6749 §5.1).
    static let noStore = ["cache-control": "no-cache, no-store, max-age=0, must-revalidate", "pragma": "no-cache"]

    /// An opaque token that looks like Google's (`ya29.` and base64url).
    static func newAccessToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<48).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return "ya29.fake-" + Base64URL.encode(bytes)
    }

    /// The request's parameters: a form (`application/x-www-form-urlencoded`, what clients send), or a JSON object
    /// of strings, which Google's endpoint takes too. A repeated name keeps its last value.
    static func parameters(of request: SandboxHTTPRequest) -> [String: String] {
        let body = request.bodyBytes
        if request.header("content-type")?.lowercased().hasPrefix("application/json") == true {
            guard let object = (try? JSONValue.decode(body))?.objectValue else { return [:] }
            return object.compactMapValues { value in
                if case .string(let text) = value { return text }
                return nil
            }
        }
        var parameters: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = formDecode(parts[0]) else { continue }
            parameters[name] = parts.count > 1 ? formDecode(parts[1]) : ""
        }
        return parameters
    }

    private static func formDecode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
