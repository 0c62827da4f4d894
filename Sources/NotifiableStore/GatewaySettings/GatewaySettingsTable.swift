import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// What the per-app gateway settings tables (`apns_settings`, `fcm_settings`, `webpush_settings`) share: one row per
/// app, removable, with a misconfiguration mark the gateway's refusals set.
struct GatewaySettingsTable: Sendable {
    /// A table name from the fixed list below, never from input.
    let name: String
    /// The column holding the sealed secret.
    let sealedColumn: String
    private let provider: Provider

    static let apns = GatewaySettingsTable(name: "apns_settings", sealedColumn: "sealed_private_key", provider: .apns)
    static let fcm = GatewaySettingsTable(name: "fcm_settings", sealedColumn: "sealed_service_account", provider: .fcm)
    static let webpush = GatewaySettingsTable(name: "webpush_settings", sealedColumn: "sealed_private_key", provider: .webpush)

    /// The table holding `provider`'s settings.
    init(_ provider: Provider) {
        self =
            switch provider {
            case .apns: .apns
            case .fcm: .fcm
            case .webpush: .webpush
            }
    }

    private init(name: String, sealedColumn: String, provider: Provider) {
        self.name = name
        self.sealedColumn = sealedColumn
        self.provider = provider
    }

    /// Every provider's table.
    static var all: [GatewaySettingsTable] { Provider.allCases.map(GatewaySettingsTable.init) }

    /// Every provider's settings as rows of (app_id, provider, misconfiguration_reason), for reads
    /// that look at all providers at once (the console's apps, the queue's gauges).
    static var everyProvidersSettings: String {
        all.map { "SELECT app_id, '\($0.provider.rawValue)' AS provider, misconfiguration_reason FROM \($0.name)" }
            .joined(separator: " UNION ALL ")
    }

    /// What an app's sealed secret is bound to, so a row copied to another app or provider does
    /// not open.
    func sealingContext(appID: some CustomStringConvertible) -> String { "\(provider.rawValue):\(appID)" }

    /// Removes the app's row; false when it had none.
    func remove(appID: Int64, client: Database, logger: Logger) async throws -> Bool {
        var binds = PostgresBindings()
        binds.append(appID)
        return try await client.query(
            PostgresQuery(unsafeSQL: "DELETE FROM \(name) WHERE app_id = $1 RETURNING app_id", binds: binds), logger: logger
        ).count() > 0
    }

    /// Marks the app's settings refused by the gateway, if they are still the version that was
    /// refused (saved at `settingsVersion`, give or take the millisecond a timestamp's round trip
    /// through a Double may cost); true when this call set the mark.
    func markMisconfigured(
        appID: Int64, reason: String, settingsVersion: Date, client: Database, logger: Logger
    ) async throws -> Bool {
        try await client.withConnection { connection in
            try await markMisconfigured(appID: appID, reason: reason, settingsVersion: settingsVersion, on: connection, logger: logger)
        }
    }

    func markMisconfigured(
        appID: Int64, reason: String, settingsVersion: Date, on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        var binds = PostgresBindings()
        binds.append(reason)
        binds.append(appID)
        binds.append(settingsVersion.timeIntervalSince1970)
        return try await connection.query(
            PostgresQuery(
                unsafeSQL: """
                    UPDATE \(name) SET misconfigured_at = now(), misconfiguration_reason = $1
                    WHERE app_id = $2 AND misconfigured_at IS NULL
                      AND abs(extract(epoch FROM updated_at) - $3) < 0.001
                    RETURNING app_id
                    """,
                binds: binds
            ),
            logger: logger
        ).count() > 0
    }
}
