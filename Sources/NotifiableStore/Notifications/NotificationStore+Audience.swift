import NotifiableCore
import PostgresNIO

/// How many devices a notification would reach, per provider.
public struct AudienceSize: Sendable, Equatable {
    public var byProvider: [Provider: Int64] = [:]
    public var total: Int64 { byProvider.values.reduce(0, +) }

    public init(byProvider: [Provider: Int64] = [:]) {
        self.byProvider = byProvider
    }

    public subscript(provider: Provider) -> Int64 { byProvider[provider] ?? 0 }
}

extension NotificationStore {
    /// The devices a send with `targeting` would reach now: the fan-out's own rules (registered,
    /// not invalidated, not merged, and the targeting's condition), counted instead of queued.
    public func audienceSize(appID: Int64, targeting: Targeting) async throws -> AudienceSize {
        // Rules are unioned, so "all" reaches every reachable device: the app's kept counts, not a count of them.
        if targeting.all {
            let counts = try await DeviceCountStore(client: client, logger: logger).counts(appID: appID)
            return AudienceSize(byProvider: counts.reachable)
        }
        var builder = SQLBuilder()
        builder.append(
            """
            SELECT d.provider, count(*)
            FROM devices d
            WHERE d.app_id = \(builder.bind(appID)) AND d.unregistered_at IS NULL AND d.invalidated_at IS NULL AND d.merged_into IS NULL
              AND 
            """)
        TargetingSQL.appendCondition(for: targeting, to: &builder)
        builder.append(" GROUP BY d.provider")
        var size = AudienceSize()
        for try await (name, count) in try await client.query(builder.query, logger: logger).decode((String, Int64).self) {
            if let provider = Provider(rawValue: name) { size.byProvider[provider] = count }
        }
        return size
    }
}
