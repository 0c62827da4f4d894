import Crypto
import Foundation
import NotifiableCore
import NotifiableStore

/// Dashboard sign-in: the session cookie holds a random token whose session lives in the
/// database (`DashboardSessions`), so signing out ends it for every API process at once. Each
/// form carries a CSRF token derived from the session with a key derived from the admin token
/// (changing the token invalidates every form), checked on every state-changing request.
struct DashboardSession: Sendable {
    static let cookieName = "notifiable_session"
    static let lifetime: TimeInterval = 12 * 3600
    private let key: SymmetricKey
    let sessions: DashboardSessions

    init(adminToken: String, sessions: DashboardSessions) {
        key = SymmetricKey(data: SHA256.hash(data: Data("NotifiableServer dashboard session|\(adminToken)".utf8)))
        self.sessions = sessions
    }

    /// A new session's cookie value.
    func issue(client: String?, now: Date = Date()) async throws -> String {
        try await sessions.start(expiresAt: now.addingTimeInterval(Self.lifetime), client: client)
    }

    /// Whether a cookie value is a session that has been neither signed out nor let expire.
    func isValid(_ value: String) async throws -> Bool {
        try await sessions.isActive(value)
    }

    /// Ends the session a cookie holds (sign-out).
    func end(_ value: String) async throws {
        try await sessions.end(value)
    }

    /// The token forms of this session carry.
    func csrfToken(session: String) -> String {
        Data(HMAC<SHA256>.authenticationCode(for: Data("csrf|\(session)".utf8), using: key)).map { String(format: "%02x", $0) }.joined()
    }

    func isValidCSRF(_ token: String, session: String) -> Bool {
        APIAuth.constantTimeEquals(token, csrfToken(session: session))
    }
}
