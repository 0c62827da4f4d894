import NotifiableCore
import PostgresNIO

/// How many devices a notification would reach, per provider.
public struct AudienceSize: Sendable, Equatable {
    public var apns: Int64 = 0
    public var fcm: Int64 = 0
    public var total: Int64 { apns + fcm }

    public init(apns: Int64 = 0, fcm: Int64 = 0) {
        self.apns = apns
        self.fcm = fcm
    }
}

extension NotificationStore {
    /// The devices a send with `targeting` would reach now: the fan-out's own rules (registered,
    /// not invalidated, not merged, and the targeting's condition), counted instead of queued.
    public func audienceSize(appID: Int64, targeting: Targeting) async throws -> AudienceSize {
        // Rules are unioned, so "all" reaches every reachable device: the app's kept counts, not a count of them.
        if targeting.all {
            let counts = try await DeviceCountStore(client: client, logger: logger).counts(appID: appID)
            return AudienceSize(apns: counts.apns, fcm: counts.fcm)
        }
        var builder = SQLBuilder()
        builder.append(
            """
            SELECT count(*) FILTER (WHERE d.provider = 'apns'), count(*) FILTER (WHERE d.provider = 'fcm')
            FROM devices d
            WHERE d.app_id = \(builder.bind(appID)) AND d.unregistered_at IS NULL AND d.invalidated_at IS NULL AND d.merged_into IS NULL
              AND 
            """)
        TargetingSQL.appendCondition(for: targeting, to: &builder)
        for try await (apns, fcm) in try await client.query(builder.query, logger: logger).decode((Int64, Int64).self) {
            return AudienceSize(apns: apns, fcm: fcm)
        }
        return AudienceSize()
    }
}
