import PostgresNIO

/// One PostgreSQL server that `DATABASE_URL` names: how to pool connections to it, and how to open
/// one alone (to ask its role).
public struct DatabaseServer: Sendable {
    /// `host:port` (or the socket path), for logs and metrics.
    public let name: String
    public var client: PostgresClient.Configuration
    public var connection: PostgresConnection.Configuration
}

/// What the service wants of the server it uses, as libpq's `target_session_attrs` says it.
public enum TargetSessionAttributes: String, Sendable, CaseIterable {
    /// The first server that answers.
    case any
    /// A server that accepts writes (`transaction_read_only` off).
    case readWrite = "read-write"
    /// A server not in recovery: the primary.
    case primary
    /// A server that refuses writes.
    case readOnly = "read-only"
    /// A server in recovery: a standby.
    case standby
    /// A standby if one answers, else any server.
    case preferStandby = "prefer-standby"

    /// Whether a server in this role will do, first choice or (for `prefer-standby`) fallback.
    public func accepts(_ role: ServerRole, fallback: Bool) -> Bool {
        switch self {
        case .any: true
        case .readWrite: !role.readOnly
        case .primary: !role.inRecovery
        case .readOnly: role.readOnly
        case .standby: role.inRecovery
        case .preferStandby: fallback || role.inRecovery
        }
    }

    /// Whether `accepts` has a second pass with `fallback`.
    var hasFallback: Bool { self == .preferStandby }
}

/// What a server said of itself when asked.
public struct ServerRole: Sendable, Equatable {
    /// `pg_is_in_recovery()`: a standby (or a primary still replaying its log at start).
    public var inRecovery: Bool
    /// `transaction_read_only` of a new session: a standby, or a primary told to refuse writes.
    public var readOnly: Bool

    public init(inRecovery: Bool, readOnly: Bool) {
        self.inRecovery = inRecovery
        self.readOnly = readOnly
    }

    /// Asks over `connection`.
    static func of(_ connection: PostgresConnection, logger: Logger) async throws -> ServerRole {
        let rows = try await connection.query(
            "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'", logger: logger)
        for try await (inRecovery, readOnly) in rows.decode((Bool, Bool).self) {
            return ServerRole(inRecovery: inRecovery, readOnly: readOnly)
        }
        throw NoRoleAnswer()
    }

    struct NoRoleAnswer: Error {}
}
