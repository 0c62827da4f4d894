import ArgumentParser
import Foundation
import Logging
import NotifiableApp
import NotifiableCore
import NotifiableStore

struct Retention: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove now what is older than the retention period, as workers do every hour; print what went, as JSON.",
        discussion: """
            Days of deliveries go as whole partitions; notifications whose deliveries are all gone, sandbox pushes, \
            and devices unregistered, invalidated or merged that long ago go in small batches. \
            NOTIFIABLE_RETENTION_DAYS sets the period (default 30); an app may keep fewer days \
            (notifiable apps update --retention-days), and its settled deliveries older than that go in batches.
            """
    )

    @Option(help: "Days to keep, instead of NOTIFIABLE_RETENTION_DAYS.") var days: Int?
    @Option(help: "Apply retention as if it were this time (ISO 8601), for a drill on a copy of the data.") var asOf: String?

    func validate() throws {
        if let days, !(1...3650).contains(days) { throw ValidationError("--days must be from 1 to 3650") }
        if let asOf, Self.parse(asOf) == nil { throw ValidationError("--as-of must be an ISO 8601 time, like 2026-11-25T06:00:00Z") }
    }

    func run() async throws {
        let now = asOf.flatMap(Self.parse)
        let keep = days
        let report = try await withStores(audit: CommandAudit("retention")) { stores in
            try await RetentionStore(client: stores.client, logger: Logger(label: "notifiable.retention"))
                .run(keepingDays: keep ?? stores.configuration.retentionDays, now: now)
        }
        let json: [String: Any] = [
            "dropped_partitions": report.droppedPartitions, "deleted_deliveries": report.deletedDeliveries,
            "deleted_notifications": report.deletedNotifications,
            "deleted_sandbox_pushes": report.deletedSandboxPushes, "purged_devices": report.purgedDevices,
            "deleted_device_events": report.deletedDeviceEvents, "deleted_webhook_events": report.deletedWebhookEvents,
            "deleted_activity_tokens": report.deletedActivityTokens,
            "longest_lock_ms": report.longestLock.seconds * 1000,
        ]
        let data = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }

    private static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}
