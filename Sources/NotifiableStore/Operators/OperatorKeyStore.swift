import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// An admin API key as listed: never its text, which is shown once when it is made.
public struct OperatorKeyRecord: Sendable, Equatable {
    public let id: Int64
    public let operatorName: String
    public let label: String
    public let createdAt: Date
    public let expiresAt: Date?
    public let revokedAt: Date?
    public let lastUsedAt: Date?
}

/// What presenting a key comes to.
public enum OperatorKeyCheck: Sendable, Equatable {
    case valid(ConsoleOperator, keyID: Int64)
    case unknown
    case revoked
    case expired
    /// Its operator is disabled.
    case disabled
}

/// Operators' admin API keys (`operator_keys`).
public struct OperatorKeyStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// A new key for the operator; its text (shown once) and record.
    public func create(operatorID: Int64, label: String, expiresAt: Date?) async throws -> (key: String, record: OperatorKeyRecord) {
        let key = OperatorKey.generate()
        let rows = try await client.query(
            """
            INSERT INTO operator_keys (operator_id, label, digest, expires_at)
            VALUES (\(operatorID), \(label), \(ByteBuffer(bytes: OperatorKey.digest(key))), \(expiresAt))
            RETURNING id
            """,
            logger: logger)
        guard let id = try await rows.decode(Int64.self).first(where: { _ in true }), let record = try await records(operatorID: nil, id: id).first else {
            throw StoreError(description: "the new key was not stored")
        }
        return (key, record)
    }

    /// The operator's keys (every operator's when nil), newest first.
    public func list(operatorID: Int64? = nil) async throws -> [OperatorKeyRecord] {
        try await records(operatorID: operatorID, id: nil)
    }

    /// Ends a key now; false when there is no such live key (of that operator, when given).
    public func revoke(id: Int64, operatorID: Int64? = nil) async throws -> Bool {
        try await client.query(
            """
            UPDATE operator_keys SET revoked_at = now()
            WHERE id = \(id) AND revoked_at IS NULL AND (\(operatorID)::int8 IS NULL OR operator_id = \(operatorID))
            RETURNING id
            """,
            logger: logger
        ).count() == 1
    }

    /// Who a presented key acts as, and why not when it does not.
    public func check(_ key: String) async throws -> OperatorKeyCheck {
        guard OperatorKey.isWellFormed(key) else { return .unknown }
        let rows = try await client.query(
            """
            UPDATE operator_keys k SET last_used_at = now()
            FROM operators o
            WHERE k.digest = \(ByteBuffer(bytes: OperatorKey.digest(key))) AND o.id = k.operator_id
            RETURNING k.id, k.revoked_at IS NOT NULL, coalesce(k.expires_at <= now(), false), o.disabled_at IS NOT NULL, o.id, o.name, o.role,
                      array(SELECT a.app_id FROM operator_apps a WHERE a.operator_id = o.id ORDER BY a.app_id)
            """,
            logger: logger)
        for try await (keyID, revoked, expired, disabled, operatorID, name, role, apps) in rows.decode(
            (Int64, Bool, Bool, Bool, Int64, String, String, [Int64]).self)
        {
            if revoked { return .revoked }
            if expired { return .expired }
            if disabled { return .disabled }
            let account = ConsoleOperator(id: operatorID, name: name, role: OperatorRole(rawValue: role) ?? .viewer, appIDs: Set(apps))
            return .valid(account, keyID: keyID)
        }
        return .unknown
    }

    private func records(operatorID: Int64?, id: Int64?) async throws -> [OperatorKeyRecord] {
        let rows = try await client.query(
            """
            SELECT k.id, o.name, k.label, k.created_at, k.expires_at, k.revoked_at, k.last_used_at
            FROM operator_keys k JOIN operators o ON o.id = k.operator_id
            WHERE (\(operatorID)::int8 IS NULL OR k.operator_id = \(operatorID)) AND (\(id)::int8 IS NULL OR k.id = \(id))
            ORDER BY k.id DESC
            """,
            logger: logger)
        var records: [OperatorKeyRecord] = []
        for try await (id, name, label, created, expires, revoked, used) in rows.decode((Int64, String, String, Date, Date?, Date?, Date?).self) {
            records.append(
                OperatorKeyRecord(
                    id: id, operatorName: name, label: label, createdAt: created, expiresAt: expires, revokedAt: revoked, lastUsedAt: used))
        }
        return records
    }
}
