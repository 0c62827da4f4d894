import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableTesting
import Testing

/// Scheduled sends through the whole pipeline: they wait in the database, so they go at their
/// time, once, whatever restarts in between, and never once cancelled.
@Suite struct E2EScheduledSendsTests {
    static func iso(_ date: Date) -> String { Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date) }

    @Test func aSendFourSecondsAheadGoesAtFourSecondsNotBefore() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0x5C1)
                _ = try await Pipeline.register(client, app.deviceCredential, token: token, alias: "zoe")
                let sendAt = Date().addingTimeInterval(4)
                let sent = try await client.signed(
                    .post, "/api/v1/notifications", body: #"{"title": "Later", "user_aliases": ["zoe"], "send_at": "\#(Self.iso(sendAt))"}"#,
                    as: app.serverCredential
                )
                let answeredAt = Date()
                #expect(sent.status == .accepted, "\(String(buffer: sent.body))")
                // An answer that arrives before the time was written before it, so it must say scheduled. (A loaded
                // machine can take the whole lead to answer; then it rightly says queued.)
                if answeredAt < sendAt {
                    #expect(sent.json["state"]?.stringValue == "scheduled")
                }
                let id = try #require(sent.json["id"]?.intValue)

                #expect(try await Pipeline.settled(service, id))
                // Nothing before its time, on any machine: its audience was resolved, and its push
                // reached the gateway, only once the time had come.
                let push = try #require(gateway.pushes(to: token).first)
                #expect(push.receivedAt >= sendAt)
                let resolvedAt = try #require(
                    try await service.integer(
                        "SELECT (extract(epoch FROM min(created_at)) * 1000)::int8 FROM deliveries WHERE notification_id = \(id)"
                    ))
                #expect(Double(resolvedAt) / 1000 >= sendAt.timeIntervalSince1970 - 0.001, "its audience is not resolved before then")
                #expect(push.receivedAt.timeIntervalSince(sendAt) < 10, "and soon after it")
                #expect(gateway.pushes(to: token).count == 1)
            }
        }
    }

    @Test func aCancelledScheduledSendNeverGoes() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0x5C2)
                _ = try await Pipeline.register(client, app.deviceCredential, token: token, alias: "zoe")
                let sendAt = Date().addingTimeInterval(8)
                let sent = try await client.signed(
                    .post, "/api/v1/notifications", body: #"{"title": "Never", "user_aliases": ["zoe"], "send_at": "\#(Self.iso(sendAt))"}"#,
                    as: app.serverCredential
                )
                let id = try #require(sent.json["id"]?.intValue)
                let cancelled = try await client.signed(.delete, "/api/v1/notifications/\(id)", as: app.serverCredential)
                #expect(cancelled.json["state"]?.stringValue == "cancelled")
                try #require(Date() < sendAt, "cancelled before its time")
                try await Task.sleep(until: .now + .seconds(sendAt.timeIntervalSinceNow + 1.5))
                #expect(gateway.pushes(to: token).isEmpty)
                #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(id)") == 0)
            }
        }
    }

    @Test func aScheduledSendGoesOnceAcrossARestart() async throws {
        try await withFakeAPNs { gateway in
            try await TestDatabase.withFreshDatabase { url in
                let token = Pipeline.token(0x5C3)
                let (id, sendAt) = try await withTestService(onDatabase: url, workers: true) { client, service in
                    let app = try await service.createApp()
                    try await service.connectAPNs(appID: app.app.id, to: gateway)
                    _ = try await Pipeline.register(client, app.deviceCredential, token: token, alias: "zoe")
                    // Far enough ahead that the service can stop first, even on a loaded machine.
                    let sendAt = Date().addingTimeInterval(15)
                    let sent = try await client.signed(
                        .post, "/api/v1/notifications", body: #"{"title": "Across", "user_aliases": ["zoe"], "send_at": "\#(Self.iso(sendAt))"}"#,
                        as: app.serverCredential
                    )
                    return (try #require(sent.json["id"]?.intValue), sendAt)
                }
                // The first service stopped before the time came; a second one sends it.
                try #require(Date() < sendAt, "the first service stopped before the send time")
                try await withTestService(onDatabase: url, workers: true) { _, service in
                    #expect(try await Pipeline.settled(service, id))
                    try await Task.sleep(for: .milliseconds(500))
                    #expect(gateway.pushes(to: token).count == 1)
                    #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(id) AND state = 'sent'") == 1)
                }
            }
        }
    }

    /// "At 08:00 in each user's morning": each device is due when the wall-clock time comes in its
    /// own time zone; where it has already come, at once; without a known zone, in UTC.
    @Test func aLocalTimeReachesEachDeviceAtThatTimeInItsOwnZone() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let zones: [(name: String?, token: String)] = [
                    ("UTC", Pipeline.token(0x7001)), ("Pacific/Kiritimati", Pipeline.token(0x7002)),
                    ("America/Los_Angeles", Pipeline.token(0x7003)), ("Mars/Olympus_Mons", Pipeline.token(0x7004)),
                    (nil, Pipeline.token(0x7005)),
                ]
                var devices: [String: Int64] = [:]
                for zone in zones {
                    let timeZone = zone.name.map { #", "time_zone": "\#($0)""# } ?? ""
                    devices[zone.token] = try await Pipeline.register(
                        client, app.deviceCredential, token: zone.token, alias: "zoe", extra: timeZone)
                }

                // A wall-clock time 6 s ahead of UTC's, written without a zone.
                let wallClock = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 6).rounded(.up))
                let text = wallClock.formatted(
                    Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day().time(includingFractionalSeconds: false).dateTimeSeparator(.standard)
                        .timeSeparator(.colon))
                #expect(!text.hasSuffix("Z"), "\(text)")
                let sent = try await client.signed(
                    .post, "/api/v1/notifications", body: #"{"title": "Morning", "user_aliases": ["zoe"], "send_at": "\#(text)", "local_time": true}"#,
                    as: app.serverCredential
                )
                #expect(sent.status == .accepted, "\(String(buffer: sent.body))")
                #expect(sent.json["local_time"] == .bool(true))
                #expect(sent.json["send_at"]?.stringValue == text)
                let id = try #require(sent.json["id"]?.intValue)

                // Kiritimati (UTC+14) passed that time 14 hours ago: at once.
                #expect(try await service.eventually(timeout: .seconds(60)) { !gateway.pushes(to: zones[1].token).isEmpty })
                #expect(
                    try await service.integer(
                        "SELECT count(*) FROM deliveries WHERE notification_id = \(id) AND device_id = \(devices[zones[1].token] ?? 0) AND run_at = created_at"
                    ) == 1, "due the moment it was created")

                // Sent at that time and not before; how soon after is the machine's speed.
                let dueNow = [zones[0], zones[3], zones[4]]
                #expect(try await service.eventually(timeout: .seconds(60)) { dueNow.allSatisfy { !gateway.pushes(to: $0.token).isEmpty } })
                for zone in dueNow {
                    let push = try #require(gateway.pushes(to: zone.token).first, "\(zone.name ?? "no zone")")
                    #expect(push.receivedAt >= wallClock, "\(zone.name ?? "no zone")")
                }
                // Los Angeles gets it at 08:00 there, hours from now.
                #expect(gateway.pushes(to: zones[2].token).isEmpty)
                let losAngeles = try #require(TimeZone(identifier: "America/Los_Angeles"))
                let due = wallClock.addingTimeInterval(-TimeInterval(losAngeles.secondsFromGMT(for: wallClock)))
                let runAt = try #require(
                    try await service.integer(
                        "SELECT extract(epoch FROM run_at)::int8 FROM deliveries WHERE notification_id = \(id) AND device_id = \(devices[zones[2].token] ?? 0) AND state = 'available'"
                    ))
                #expect(abs(Double(runAt) - due.timeIntervalSince1970) < 1.5)
            }
        }
    }
}
