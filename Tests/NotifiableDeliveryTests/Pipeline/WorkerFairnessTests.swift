import Foundation
import NotifiableTesting
import Testing

/// One app's broadcast must not hold another app's push: fan-out goes in turns, and each claim
/// shares its batch among the apps with ready deliveries.
@Suite struct WorkerFairnessTests {
    @Test func anotherAppsPushIsSentWhileABroadcastIsStillFanningOut() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(
                workers: true,
                configure: {
                    // Small batches and short turns stretch the broadcast's fan-out over seconds.
                    $0.worker.fanOutBatchSize = 5
                    $0.worker.fanOutTurn = .milliseconds(20)
                }
            ) { client, service in
                let broadcaster = try await service.createApp()
                let other = try await service.createApp()
                try await service.connectAPNs(appID: broadcaster.app.id, to: gateway)
                try await service.connectAPNs(appID: other.app.id, to: gateway)
                try await service.insertDevices(appID: broadcaster.app.id, count: 2_000, tokenSeed: 0xB0)
                let token = Pipeline.token(0x0E)
                let device = try await Pipeline.register(client, other.deviceCredential, token: token)

                let broadcast = try await Pipeline.send(client, broadcaster.serverCredential, #"{"message": "to all", "all": true}"#)
                let started = try await service.eventually {
                    (try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(broadcast)") ?? 0) > 0
                }
                #expect(started)
                let push = try await Pipeline.send(client, other.serverCredential, #"{"message": "just you", "device_ids": [\#(device)]}"#)
                let recorded = try await service.eventually(timeout: .seconds(30)) { try await service.deliveries(of: push, in: "sent") == 1 }
                #expect(recorded && gateway.pushes(to: token).count == 1)

                // Sent before the broadcast had even been fanned out, let alone sent.
                let sentFirst = try await service.integer(
                    """
                    SELECT count(*) FROM deliveries q, notifications n
                    WHERE q.notification_id = \(push) AND q.state = 'sent' AND n.id = \(broadcast)
                      AND (n.fanned_out_at IS NULL OR q.sent_at < n.fanned_out_at)
                    """)
                let timings = try await service.text(
                    """
                    SELECT 'push sent ' || q.sent_at::time || ', broadcast fanned out ' || coalesce(n.fanned_out_at::time::text, '-')
                    FROM deliveries q, notifications n WHERE q.notification_id = \(push) AND n.id = \(broadcast)
                    """)
                #expect(sentFirst == 1, "\(timings ?? "")")
                let everyone = try await service.eventually(timeout: .seconds(120)) { try await service.deliveries(of: broadcast, in: "sent") == 2_000 }
                let states = try await service.text(
                    "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state, count(*) AS n FROM deliveries WHERE notification_id = \(broadcast) GROUP BY state) s"
                )
                let fanOut = try await service.text("SELECT state || ' cursor ' || fanout_cursor FROM notifications WHERE id = \(broadcast)")
                #expect(everyone, "deliveries: \(states ?? "none"); notification: \(fanOut ?? "")")
            }
        }
    }
}
