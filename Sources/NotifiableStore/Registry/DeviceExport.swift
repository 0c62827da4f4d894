import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// A device as `notifiable devices export` writes it: the fields an import reads back.
public struct ExportedDevice: Sendable, Equatable {
    public let id: Int64
    public let provider: Provider
    public let token: String
    public let name: String?
    public let userAlias: String?
    public let language: String?
    public let country: String?
    /// Compact JSON object text.
    public let customProperties: String
    /// Sorted.
    public let tags: [String]
    /// A browser's subscription keys (Web Push devices): without them an imported browser could
    /// never be sent to.
    public let pushKeys: WebPushKeys?
}

extension DeviceStore {
    /// The app's reachable devices (registered, not merged away, token not reported dead) after
    /// `afterID`, in id order: one keyset page of an export, so no export holds every row at once.
    public func exportPage(appID: Int64, afterID: Int64, limit: Int) async throws -> [ExportedDevice] {
        let rows = try await client.query(
            """
            SELECT id, provider, token, name, user_alias, language, country, custom_properties::text, tags,
                   push_keys ->> 'p256dh', push_keys ->> 'auth'
            FROM devices
            WHERE app_id = \(appID) AND id > \(afterID)
              AND unregistered_at IS NULL AND merged_into IS NULL AND invalidated_at IS NULL
            ORDER BY id LIMIT \(limit)
            """,
            logger: logger
        )
        var page: [ExportedDevice] = []
        for try await (id, provider, token, name, alias, language, country, custom, tags, p256dh, auth) in rows.decode(
            (Int64, String, String, String?, String?, String?, String?, String, [String], String?, String?).self
        ) {
            guard let provider = Provider(rawValue: provider) else {
                throw StoreError(description: "device \(id) has unknown provider \(provider)")
            }
            page.append(
                ExportedDevice(
                    id: id, provider: provider, token: token, name: name, userAlias: alias,
                    language: language, country: country, customProperties: custom, tags: tags,
                    pushKeys: p256dh.flatMap { p256dh in auth.map { WebPushKeys(p256dh: p256dh, auth: $0) } }
                ))
        }
        return page
    }
}
