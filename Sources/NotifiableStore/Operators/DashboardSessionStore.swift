import Foundation
import Logging
import NotifiableCore
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
    /// `operatorID` nil: the admin token signed in.
    public func start(digest: Data, expiresAt: Date, client address: String?, operatorID: Int64?) async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("DELETE FROM dashboard_sessions WHERE expires_at < now() - interval '1 day'", logger: logger)
            try await connection.query(
                """
                INSERT INTO dashboard_sessions (token_digest, expires_at, client, operator_id)
                VALUES (\(digest), \(expiresAt), \(address), \(operatorID))
                """,
                logger: logger
            )
        }
    }

    /// Who holds the session known by `digest`, when it has neither ended nor expired and its
    /// operator is not disabled; nil otherwise.
    public func holder(digest: Data) async throws -> ConsoleOperator? {
        let rows = try await client.query(
            """
            SELECT s.operator_id, o.name, o.role,
                   coalesce((SELECT array_agg(app_id) FROM operator_apps WHERE operator_id = s.operator_id), '{}')
            FROM dashboard_sessions s LEFT JOIN operators o ON o.id = s.operator_id
            WHERE s.token_digest = \(digest) AND s.ended_at IS NULL AND s.expires_at > now()
              AND (s.operator_id IS NULL OR o.disabled_at IS NULL)
            """,
            logger: logger
        )
        for try await (id, name, role, apps) in rows.decode((Int64?, String?, String?, [Int64]).self) {
            guard let id else { return .adminToken }
            guard let name, let role = role.flatMap(OperatorRole.init(rawValue:)) else { return nil }
            return ConsoleOperator(id: id, name: name, role: role, appIDs: Set(apps))
        }
        return nil
    }

    /// Ends the session now (sign-out); a digest that is no session changes nothing.
    public func end(digest: Data) async throws {
        try await client.query(
            "UPDATE dashboard_sessions SET ended_at = now() WHERE token_digest = \(digest) AND ended_at IS NULL",
            logger: logger
        )
    }
}
