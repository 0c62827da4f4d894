import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Per-app settings of one provider, the secret sealed with the master key.
package struct GatewaySettingsStore<Settings: GatewaySettings>: Sendable {
    let client: Database
    let keys: MasterKeyring
    let logger: Logger
    private let table = GatewaySettingsTable(Settings.provider)

    package init(client: Database, keys: MasterKeyring, logger: Logger) {
        self.client = client
        self.keys = keys
        self.logger = logger
    }

    /// Saves the app's settings, replacing earlier ones; clears any misconfiguration mark.
    /// False when there is no such app.
    package func save(_ settings: Settings, appID: Int64) async throws -> Bool {
        let sealed = try keys.seal(settings.secret, boundTo: table.sealingContext(appID: appID))
        let query = try settings.upsert(appID: appID, sealed: Data(sealed.bytes), masterKeyID: sealed.keyID)
        return try await client.query(query, logger: logger).count() > 0
    }

    /// The app's settings with the secret opened; nil when it has none.
    package func settings(appID: Int64) async throws -> Settings? {
        for try await row in try await client.query(Settings.select(appID: appID), logger: logger) {
            return try Settings(row: row) { sealed, masterKeyID in
                try keys.open(Array(sealed), keyID: masterKeyID, boundTo: table.sealingContext(appID: appID))
            }
        }
        return nil
    }

    /// The app's settings as operators read them, without opening the secret (so the view works
    /// while a master key is missing, and no secret sits in memory for it).
    package func summary(appID: Int64) async throws -> Settings.Summary? {
        for try await row in try await client.query(Settings.selectSummary(appID: appID), logger: logger) {
            return try Settings.summary(row: row)
        }
        return nil
    }

    /// Removes the app's settings; false when it had none.
    package func remove(appID: Int64) async throws -> Bool {
        try await table.remove(appID: appID, client: client, logger: logger)
    }

    /// Records that the gateway refused the app's configuration itself, so sending stops and
    /// operators see why. The mark stays until the settings are saved again. Only the settings
    /// saved at `settingsVersion` (their `updated_at`) are marked: settings saved since were not
    /// refused. True when this call set the mark.
    @discardableResult
    package func markMisconfigured(appID: Int64, reason: String, settingsVersion: Date) async throws -> Bool {
        try await table.markMisconfigured(appID: appID, reason: reason, settingsVersion: settingsVersion, client: client, logger: logger)
    }
}

package typealias APNsSettingsStore = GatewaySettingsStore<APNsSettings>
package typealias FCMSettingsStore = GatewaySettingsStore<FCMSettings>
package typealias WebPushSettingsStore = GatewaySettingsStore<WebPushSettings>
