import Foundation
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// Worker processes as operators run them (`notifiable work`), over a database of their own.
@Suite(.serialized) struct E2EWorkerProcessTests {
    /// Environment for a `notifiable work` child over `databaseURL`.
    static func workerEnvironment(_ databaseURL: String, _ extra: [String: String] = [:]) -> [String: String] {
        [
            "DATABASE_URL": databaseURL,
            "NOTIFIABLE_MASTER_KEY": TestDatabase.masterKey.base64,
            "NOTIFIABLE_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path,
            // Long enough that a loaded machine does not expire the surviving worker's own leases
            // (which would send a third time), short enough that the killed worker's come back soon.
            "NOTIFIABLE_LEASE_SECONDS": "15",
            "NOTIFIABLE_APNS_TIMEOUT_SECONDS": "5",
            "NOTIFIABLE_POLL_MS": "50",
            "LOG_LEVEL": "error",
        ].merging(extra) { _, new in new }
    }

    /// A service over a fresh database with migrations applied, but no workers of its own.
    static func withDatabase<T: Sendable>(_ body: @Sendable (String, TestService) async throws -> T) async throws -> T {
        try await TestDatabase.withFreshDatabase { url in
            var settings = try TestDatabase.serverConfiguration()
            settings.databaseURL = url
            let configuration = settings
            return try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { postgres in
                try await Migrator(client: postgres, logger: TestDatabase.logger).migrate(try Migrator.load(from: TestDatabase.migrationsDirectory))
                return try await body(url, TestService(postgres: postgres, configuration: configuration))
            }
        }
    }

    @Test func aWorkerKilledMidWayLosesNothingAndSendsNothingTwiceInTheDatabase() async throws {
        let devices = 5_000
        try await withFakeAPNs { gateway in
            try await Self.withDatabase { url, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                try await service.insertDevices(appID: app.app.id, count: devices, tokenSeed: 0xC4A5)
                // A little latency per push keeps the first worker busy long enough to be killed mid-way.
                gateway.setLatency(.milliseconds(2))
                let (notification, _) = try await NotificationStore(client: service.postgres, logger: TestDatabase.logger).create(
                    appID: app.app.id,
                    request: NotificationRequest(content: NotificationContent(text: LocalizedText(message: "crash")), targeting: Targeting(all: true))
                )

                let first = try NotifiableProcess(["work"], environment: Self.workerEnvironment(url))
                let midway = try await service.eventually(timeout: .seconds(300), every: .milliseconds(20)) {
                    try await service.deliveries(of: notification.id, in: "sent") >= Int64(devices / 5)
                }
                #expect(midway)
                await first.kill9()
                let sentAtKill = try await service.deliveries(of: notification.id, in: "sent")
                let leasedAtKill = try await service.deliveries(of: notification.id, in: "running")

                let second = try NotifiableProcess(["work"], environment: Self.workerEnvironment(url))
                let finished = try await service.eventually(timeout: .seconds(300), every: .milliseconds(100)) {
                    try await service.deliveries(of: notification.id, in: "sent") == Int64(devices)
                }
                await second.terminate()
                #expect(finished)

                // The database: one delivery per device, every one sent once.
                #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(notification.id)") == Int64(devices))
                #expect(
                    try await service.integer("SELECT count(DISTINCT device_id) FROM deliveries WHERE notification_id = \(notification.id) AND state = 'sent'")
                        == Int64(devices))
                // The kept counters survived the kill -9 exact: the killed worker's uncommitted
                // batch counted nothing, and the rescued leases were counted once.
                let kept = try await service.keptCounters(of: notification.id)
                #expect(kept == (try await service.recountedCounters(of: notification.id)))
                #expect(kept.sent == Int64(devices) && kept.targeted == Int64(devices))

                // The gateway: at-least-once across a crash; a push accepted twice only where its
                // delivery records an attempt of unknown outcome (a lease rescued from the killed
                // worker, a timeout), never more often than those explain.
                let perToken = Dictionary(grouping: gateway.acceptedPushes, by: { $0.token.lowercased() }).mapValues(\.count)
                #expect(perToken.count == devices)
                var unknownOutcomes: [String: Int] = [:]
                let rows = try await service.postgres.query(
                    """
                    SELECT lower(d.token), q.unknown_outcomes::int8 FROM deliveries q JOIN devices d ON d.id = q.device_id
                    WHERE q.notification_id = \(notification.id)
                    """, logger: TestDatabase.logger)
                for try await (token, count) in rows.decode((String, Int64).self) { unknownOutcomes[token] = Int(count) }
                let unexplained = perToken.filter { $0.value - 1 > unknownOutcomes[$0.key, default: 0] }
                #expect(unexplained.isEmpty, "pushes accepted more often than their attempts of unknown outcome explain: \(unexplained.prefix(5))")
                let duplicates = perToken.values.reduce(0) { $0 + $1 - 1 }
                print(
                    "crash test: killed with \(sentAtKill) sent and \(leasedAtKill) leased of \(devices); gateway saw \(duplicates) duplicate pushes; second worker exit \(second.exitStatus)"
                )
            }
        }
    }

    @Test func aHundredThousandDeviceFanOutStaysUnder100MB() async throws {
        let devices = 100_000
        try await Self.withDatabase { url, service in
            let app = try await service.createApp()
            try await service.insertDevices(appID: app.app.id, count: devices, tokenSeed: 0xFA11)
            let (notification, _) = try await NotificationStore(client: service.postgres, logger: TestDatabase.logger).create(
                appID: app.app.id,
                request: NotificationRequest(content: NotificationContent(text: LocalizedText(message: "all")), targeting: Targeting(all: true))
            )
            // A fan-out-only worker: no sending lanes.
            let worker = try NotifiableProcess(["work"], environment: Self.workerEnvironment(url, ["NOTIFIABLE_WORKER_LANES": "0"]))
            let start = ContinuousClock.now
            let fannedOut = try await service.eventually(timeout: .seconds(600), every: .milliseconds(100)) {
                try await service.integer("SELECT count(*) FROM notifications WHERE id = \(notification.id) AND state = 'fanned_out'") == 1
            }
            let elapsed = ContinuousClock.now - start
            let peak = worker.peakRSSKilobytes()
            await worker.terminate()
            #expect(fannedOut)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(notification.id)") == Int64(devices))
            let peakMB = Double(try #require(peak)) / 1024
            print("fan-out of \(devices) devices: \(elapsed) in a worker process, peak RSS \(String(format: "%.1f", peakMB)) MB")
            #expect(peakMB < 100)
        }
    }
}
