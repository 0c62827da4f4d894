import Foundation
import Logging
import PostgresNIO

/// Dashboard sign-ins, by the digest of their cookie's token (the caller keys it, see
/// `DashboardSession`), so a session ends for every API process when it is signed out and the
/// table gives nobody a working session.
public struct DashboardSessionStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// A new session until `expiresAt`, known by `digest`; expired sessions older than a day go.
    public func start(digest: Data, expiresAt: Date, client address: String?) async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("DELETE FROM dashboard_sessions WHERE expires_at < now() - interval '1 day'", logger: logger)
            try await connection.query(
                """
                INSERT INTO dashboard_sessions (token_digest, expires_at, client)
                VALUES (\(digest), \(expiresAt), \(address))
                """,
                logger: logger
            )
        }
    }

    /// Whether the session known by `digest` has neither ended nor expired.
    public func isActive(digest: Data) async throws -> Bool {
        try await client.query(
            """
            SELECT 1 FROM dashboard_sessions
            WHERE token_digest = \(digest) AND ended_at IS NULL AND expires_at > now()
            """,
            logger: logger
        ).count() > 0
    }

    /// Ends the session now (sign-out); a digest that is no session changes nothing.
    public func end(digest: Data) async throws {
        try await client.query(
            "UPDATE dashboard_sessions SET ended_at = now() WHERE token_digest = \(digest) AND ended_at IS NULL",
            logger: logger
        )
    }
}
