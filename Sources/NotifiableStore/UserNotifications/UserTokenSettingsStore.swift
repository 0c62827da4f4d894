import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// What an app says about its users' tokens: the key generation that signs them, and whether
/// a device needs its user's token to take a user alias.
public struct UserTokenPolicy: Sendable, Equatable {
    public let appID: Int64
    public let generation: Int
    public let requireVerifiedAlias: Bool

    public init(appID: Int64, generation: Int, requireVerifiedAlias: Bool) {
        self.appID = appID
        self.generation = generation
        self.requireVerifiedAlias = requireVerifiedAlias
    }
}

/// Reads and changes apps' user-token policies.
public struct UserTokenSettingsStore: Sendable {
    let client: Database
    let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The app's policy; nil when there is no such app.
    public func policy(appID: Int64) async throws -> UserTokenPolicy? {
        try await Self.policies(
            client.query(
                "SELECT id, user_token_generation, require_verified_alias FROM apps WHERE id = \(appID)", logger: logger
            )
        ).first
    }

    /// The policies of these apps, by app id; apps that no longer exist are missing.
    public func policies(appIDs: [Int64]) async throws -> [Int64: UserTokenPolicy] {
        let found = try await Self.policies(
            client.query(
                "SELECT id, user_token_generation, require_verified_alias FROM apps WHERE id = ANY(\(appIDs))", logger: logger
            ))
        return Dictionary(uniqueKeysWithValues: found.map { ($0.appID, $0) })
    }

    /// Raises the app's key generation: every user token minted so far stops working at once.
    /// Nil when there is no such app.
    public func rotateKey(appID: Int64) async throws -> UserTokenPolicy? {
        try await Self.policies(
            client.query(
                """
                UPDATE apps SET user_token_generation = user_token_generation + 1, updated_at = now() WHERE id = \(appID)
                RETURNING id, user_token_generation, require_verified_alias
                """,
                logger: logger
            )
        ).first
    }

    /// Switches `require_verified_alias`; nil when there is no such app.
    public func setRequireVerifiedAlias(_ required: Bool, appID: Int64) async throws -> UserTokenPolicy? {
        try await Self.policies(
            client.query(
                """
                UPDATE apps SET require_verified_alias = \(required), updated_at = now() WHERE id = \(appID)
                RETURNING id, user_token_generation, require_verified_alias
                """,
                logger: logger
            )
        ).first
    }

    private static func policies(_ rows: PostgresRowSequence) async throws -> [UserTokenPolicy] {
        var policies: [UserTokenPolicy] = []
        for try await (id, generation, required) in rows.decode((Int64, Int32, Bool).self) {
            policies.append(UserTokenPolicy(appID: id, generation: Int(generation), requireVerifiedAlias: required))
        }
        return policies
    }
}
