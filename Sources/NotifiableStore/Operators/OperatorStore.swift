import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// An operator account as the console and the command line list it.
public struct OperatorAccount: Sendable, Equatable {
    public let id: Int64
    public let name: String
    public let role: OperatorRole
    public let appIDs: [Int64]
    public let createdAt: Date
    public let disabledAt: Date?

    public var consoleOperator: ConsoleOperator { ConsoleOperator(id: id, name: name, role: role, appIDs: Set(appIDs)) }
}

/// Why an operator could not be added or changed, in words for the person who asked.
public enum OperatorChangeRefused: Error, Equatable, CustomStringConvertible {
    case nameTaken(String)
    case noSuchApps([Int64])

    public var description: String {
        switch self {
        case .nameTaken(let name): return "There is already an operator named \(name)."
        case .noSuchApps(let ids): return "There is no app \(ids.map(String.init).joined(separator: ", "))."
        }
    }
}

/// Operator accounts (`operators`, `operator_apps`).
public struct OperatorStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// A new operator; `appIDs` must all exist.
    public func add(name: String, role: OperatorRole, password: PasswordHash, appIDs: [Int64]) async throws -> OperatorAccount {
        do {
            let id = try await client.withTransaction(logger: logger) { connection -> Int64 in
                let rows = try await connection.query(
                    "INSERT INTO operators (name, role, password_hash) VALUES (\(name), \(role.rawValue), \(password.encoded)) RETURNING id",
                    logger: logger)
                guard let id = try await rows.decode(Int64.self).first(where: { _ in true }) else { throw StoreError(description: "no operator id") }
                try await Self.grant(appIDs, to: id, on: connection, logger: logger)
                return id
            }
            return try await account(id: id)!
        } catch let error as PSQLError where error.isUniqueViolation {
            throw OperatorChangeRefused.nameTaken(name)
        }
    }

    public func list() async throws -> [OperatorAccount] {
        try await accounts(id: nil, name: nil)
    }

    public func account(id: Int64) async throws -> OperatorAccount? {
        try await accounts(id: id, name: nil).first
    }

    public func account(name: String) async throws -> OperatorAccount? {
        try await accounts(id: nil, name: name).first
    }

    /// The enabled operator `name` with the hash to check a password against.
    public func signInRecord(name: String) async throws -> (OperatorAccount, PasswordHash)? {
        guard let account = try await account(name: name), account.disabledAt == nil else { return nil }
        let rows = try await client.query("SELECT password_hash FROM operators WHERE id = \(account.id)", logger: logger)
        guard let text = try await rows.decode(String.self).first(where: { _ in true }), let hash = PasswordHash(encoded: text) else { return nil }
        return (account, hash)
    }

    /// Changes what is given; nil leaves a field as it is. Nil when there is no such operator.
    public func update(
        id: Int64, role: OperatorRole? = nil, appIDs: [Int64]? = nil, password: PasswordHash? = nil, disabled: Bool? = nil
    )
        async throws -> OperatorAccount?
    {
        let found = try await client.withTransaction(logger: logger) { connection -> Bool in
            let rows = try await connection.query(
                """
                UPDATE operators SET role = coalesce(\(role?.rawValue), role), password_hash = coalesce(\(password?.encoded), password_hash),
                       disabled_at = CASE WHEN \(disabled) IS NULL THEN disabled_at WHEN \(disabled) THEN coalesce(disabled_at, now()) END
                WHERE id = \(id) RETURNING id
                """,
                logger: logger)
            guard try await rows.count() == 1 else { return false }
            if let appIDs {
                try await connection.query("DELETE FROM operator_apps WHERE operator_id = \(id)", logger: logger)
                try await Self.grant(appIDs, to: id, on: connection, logger: logger)
            }
            // A disabled operator, or one whose password changed, is signed out everywhere.
            if disabled == true || password != nil {
                try await connection.query("UPDATE dashboard_sessions SET ended_at = now() WHERE operator_id = \(id) AND ended_at IS NULL", logger: logger)
            }
            return true
        }
        return found ? try await account(id: id) : nil
    }

    private static func grant(_ appIDs: [Int64], to id: Int64, on connection: PostgresConnection, logger: Logger) async throws {
        guard !appIDs.isEmpty else { return }
        let rows = try await connection.query(
            "SELECT x FROM unnest(\(appIDs)::int8[]) x WHERE NOT EXISTS (SELECT 1 FROM apps WHERE apps.id = x) ORDER BY x", logger: logger)
        let missing = try await rows.decode(Int64.self).reduce(into: []) { $0.append($1) }
        guard missing.isEmpty else { throw OperatorChangeRefused.noSuchApps(missing) }
        try await connection.query(
            "INSERT INTO operator_apps (operator_id, app_id) SELECT \(id), x FROM unnest(\(appIDs)::int8[]) x ON CONFLICT DO NOTHING", logger: logger)
    }

    /// Every operator, or the one with `id` or `name`.
    private func accounts(id: Int64?, name: String?) async throws -> [OperatorAccount] {
        let rows = try await client.query(
            """
            SELECT o.id, o.name, o.role, o.created_at, o.disabled_at,
                   coalesce(array_agg(a.app_id ORDER BY a.app_id) FILTER (WHERE a.app_id IS NOT NULL), '{}')
            FROM operators o LEFT JOIN operator_apps a ON a.operator_id = o.id
            WHERE (\(id)::int8 IS NULL OR o.id = \(id)) AND (\(name)::text IS NULL OR o.name = \(name))
            GROUP BY o.id ORDER BY o.name
            """, logger: logger)
        var accounts: [OperatorAccount] = []
        for try await (id, name, role, createdAt, disabledAt, apps) in rows.decode((Int64, String, String, Date, Date?, [Int64]).self) {
            accounts.append(
                OperatorAccount(
                    id: id, name: name, role: OperatorRole(rawValue: role) ?? .viewer, appIDs: apps, createdAt: createdAt, disabledAt: disabledAt))
        }
        return accounts
    }
}
