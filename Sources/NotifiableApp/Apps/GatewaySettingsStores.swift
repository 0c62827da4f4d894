import Foundation
import Logging
import NotifiableCore
import NotifiableStore

/// Every provider's per-app settings, for the surfaces that show or change them side by side (the
/// admin API's app, the console, the CLI): the one place that lists the providers' stores.
package struct GatewaySettingsStores: Sendable {
    package let apns: APNsSettingsStore
    package let fcm: FCMSettingsStore
    package let webpush: WebPushSettingsStore

    package init(client: Database, keys: MasterKeyring, logger: Logger) {
        apns = APNsSettingsStore(client: client, keys: keys, logger: logger)
        fcm = FCMSettingsStore(client: client, keys: keys, logger: logger)
        webpush = WebPushSettingsStore(client: client, keys: keys, logger: logger)
    }

    /// What operators read of each provider's settings for the app (nil where it has none).
    package func summaries(appID: Int64) async throws -> GatewaySummaries {
        async let apns = apns.summary(appID: appID)
        async let fcm = fcm.summary(appID: appID)
        async let webpush = webpush.summary(appID: appID)
        return GatewaySummaries(apns: try await apns, fcm: try await fcm, webpush: try await webpush)
    }

    /// Removes the app's settings for `provider`; false when it had none.
    package func remove(_ provider: Provider, appID: Int64) async throws -> Bool {
        switch provider {
        case .apns: try await apns.remove(appID: appID)
        case .fcm: try await fcm.remove(appID: appID)
        case .webpush: try await webpush.remove(appID: appID)
        }
    }
}

/// Each provider's settings of one app as operators read them.
public struct GatewaySummaries: Sendable {
    public let apns: APNsSettingsSummary?
    public let fcm: FCMSettingsSummary?
    public let webpush: WebPushSettingsSummary?

    /// Whether the app has settings for `provider`, and the gateway's refusal of them if any.
    public func state(of provider: Provider) -> (configured: Bool, misconfiguration: String?) {
        switch provider {
        case .apns: (apns != nil, apns?.misconfigurationReason)
        case .fcm: (fcm != nil, fcm?.misconfigurationReason)
        case .webpush: (webpush != nil, webpush?.misconfigurationReason)
        }
    }
}
