import Crypto
import Foundation
import Logging
import PostgresNIO

/// Dashboard sign-ins: a random token in the browser's cookie, its SHA-256 here, so a session
/// ends for every API process when it is signed out.
public struct DashboardSessions: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// A new session until `expiresAt`; returns the token for the cookie, which is never stored.
    public func start(expiresAt: Date, client address: String?) async throws -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) }
        let token = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("DELETE FROM dashboard_sessions WHERE expires_at < now() - interval '1 day'", logger: logger)
            try await connection.query(
                """
                INSERT INTO dashboard_sessions (token_sha256, expires_at, client)
                VALUES (\(Self.digest(token)), \(expiresAt), \(address))
                """,
                logger: logger
            )
        }
        return token
    }

    /// Whether `token` is a session that has neither ended nor expired.
    public func isActive(_ token: String) async throws -> Bool {
        guard Self.isWellFormed(token) else { return false }
        return try await client.query(
            """
            SELECT 1 FROM dashboard_sessions
            WHERE token_sha256 = \(Self.digest(token)) AND ended_at IS NULL AND expires_at > now()
            """,
            logger: logger
        ).count() > 0
    }

    /// Ends the session now (sign-out); a token that is no session changes nothing.
    public func end(_ token: String) async throws {
        guard Self.isWellFormed(token) else { return }
        try await client.query(
            "UPDATE dashboard_sessions SET ended_at = now() WHERE token_sha256 = \(Self.digest(token)) AND ended_at IS NULL",
            logger: logger
        )
    }

    static func digest(_ token: String) -> Data { Data(SHA256.hash(data: Data(token.utf8))) }

    /// 43 base64url characters, what `start` hands out; anything else is refused unread.
    static func isWellFormed(_ token: String) -> Bool {
        token.utf8.count == 43 && token.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }
}
