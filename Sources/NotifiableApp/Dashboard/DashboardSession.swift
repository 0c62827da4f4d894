import Crypto
import Foundation
import NotifiableCore
import NotifiableStore

/// Dashboard sign-in: the session cookie holds a random token whose session lives in the
/// database (`DashboardSessionStore`), so signing out ends it for every API process at once. The
/// database knows the token only by its HMAC under a key derived from the admin token, so
/// changing the admin token ends every session; each form carries a CSRF token derived from the
/// session with the same key, checked on every state-changing request.
struct DashboardSession: Sendable {
    static let cookieName = "notifiable_session"
    static let lifetime: TimeInterval = 12 * 3600
    private let key: SymmetricKey
    let sessions: DashboardSessionStore

    init(adminToken: String, sessions: DashboardSessionStore) {
        key = SymmetricKey(data: SHA256.hash(data: Data("NotifiableServer dashboard session|\(adminToken)".utf8)))
        self.sessions = sessions
    }

    /// A new session's cookie value: 32 random bytes, base64url.
    func issue(client: String?, operatorID: Int64?, now: Date = Date()) async throws -> String {
        let token = SymmetricKey(size: .bits256).withUnsafeBytes { Base64URL.encode($0) }
        try await sessions.start(digest: digest(token), expiresAt: now.addingTimeInterval(Self.lifetime), client: client, operatorID: operatorID)
        return token
    }

    /// Who holds a cookie's session, when it has been neither signed out nor let expire.
    /// Anything but what `issue` hands out is refused unread.
    func holder(_ value: String) async throws -> ConsoleOperator? {
        guard Self.isWellFormed(value) else { return nil }
        return try await sessions.holder(digest: digest(value))
    }

    /// Ends the session a cookie holds (sign-out).
    func end(_ value: String) async throws {
        guard Self.isWellFormed(value) else { return }
        try await sessions.end(digest: digest(value))
    }

    /// What the database knows a session's token by.
    func digest(_ token: String) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: Data("session|\(token)".utf8), using: key))
    }

    static func isWellFormed(_ token: String) -> Bool {
        token.utf8.count == 43 && Base64URL.decode(Substring(token))?.count == 32
    }

    /// The token forms of this session carry.
    func csrfToken(session: String) -> String {
        Data(HMAC<SHA256>.authenticationCode(for: Data("csrf|\(session)".utf8), using: key)).map { String(format: "%02x", $0) }.joined()
    }

    func isValidCSRF(_ token: String, session: String) -> Bool {
        APIAuth.constantTimeEquals(token, csrfToken(session: session))
    }
}
