import Foundation
import NotifiableCore
import PostgresNIO

/// A provider's per-app settings as the store keeps them: one row per app in the provider's own
/// table (`GatewaySettingsTable`), its secret sealed with the master key and bound to the app.
/// Each provider writes its SQL in its own file; `GatewaySettingsStore` does the rest once.
package protocol GatewaySettings: Sendable, Equatable {
    /// What operators may read back: everything but the secret.
    associatedtype Summary: Sendable, Equatable

    static var provider: Provider { get }
    /// The text kept sealed at rest (the `.p8` key, the service account's JSON).
    var secret: String { get }
    var misconfigurationReason: String? { get set }
    var updatedAt: Date? { get set }

    /// Inserts or replaces the app's row with `sealed` as the secret, clearing the misconfiguration
    /// mark, when the app exists; returns one row then.
    func upsert(appID: Int64, sealed: Data, masterKeyID: String) throws -> PostgresQuery
    /// Selects the app's row, read by `init(row:secret:)`.
    static func select(appID: Int64) -> PostgresQuery
    /// The settings from a `select` row; `secret` opens the sealed secret (bytes, master key id).
    init(row: PostgresRow, secret: (Data, String?) throws -> String) throws
    /// Selects the app's row for `summary(row:)`, without the sealed secret.
    static func selectSummary(appID: Int64) -> PostgresQuery
    static func summary(row: PostgresRow) throws -> Summary
}
