import Crypto
import Foundation
import NotifiableCore

/// Dashboard sign-in without server-side state: the session cookie is its expiry signed with a
/// key derived from the admin token (changing the token signs everyone out), and each form
/// carries a CSRF token derived from the session, checked on every state-changing request.
struct DashboardSession: Sendable {
    static let cookieName = "notifiable_session"
    static let lifetime: TimeInterval = 12 * 3600
    private let key: SymmetricKey

    init(adminToken: String) {
        key = SymmetricKey(data: SHA256.hash(data: Data("NotifiableServer dashboard session|\(adminToken)".utf8)))
    }

    /// A new session's cookie value.
    func issue(now: Date = Date()) -> String {
        let expiry = Int64(now.timeIntervalSince1970 + Self.lifetime)
        return "\(expiry).\(signature("session|\(expiry)"))"
    }

    /// Whether a cookie value is a session this server issued that has not expired.
    func isValid(_ value: String, now: Date = Date()) -> Bool {
        let parts = value.split(separator: ".", maxSplits: 1).map(String.init)
        guard parts.count == 2, let expiry = Int64(parts[0]), Double(expiry) > now.timeIntervalSince1970 else { return false }
        return APIAuth.constantTimeEquals(parts[1], signature("session|\(expiry)"))
    }

    /// The token forms of this session carry.
    func csrfToken(session: String) -> String {
        signature("csrf|\(session)")
    }

    func isValidCSRF(_ token: String, session: String) -> Bool {
        APIAuth.constantTimeEquals(token, csrfToken(session: session))
    }

    private func signature(_ text: String) -> String {
        Data(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)).map { String(format: "%02x", $0) }.joined()
    }
}
