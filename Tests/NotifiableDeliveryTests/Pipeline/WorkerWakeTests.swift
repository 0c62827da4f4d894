import Foundation
import NotifiableTesting
import Testing

/// Idle workers sleep up to their poll interval; a notification must not wait for it. The API
/// NOTIFYs `notifiable_work` on commit and every worker LISTENs, so the push goes out at once.
@Suite struct WorkerWakeTests {
    @Test func anIdleWorkerIsWokenByANewNotificationInsteadOfWaitingOutItsPoll() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true, configure: { $0.worker.pollInterval = .seconds(120) }) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0x1157)
                let deviceID = try await Pipeline.register(client, app.deviceCredential, token: token)
                // The worker listens (a NOTIFY before that would be missed, and that is not what this
                // tests), and has had time to poll once and go to sleep for the long interval.
                let listening = try await service.eventually {
                    try await service.integer(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND state = 'idle'"
                    ) ?? 0 > 0
                }
                #expect(listening, "the worker never listened for work")
                try await Task.sleep(for: .seconds(1))

                let sent = ContinuousClock.now
                _ = try await Pipeline.send(client, app.serverCredential, #"{"title": "Now", "device_ids": [\#(deviceID)]}"#)
                let arrived = try await service.eventually { !gateway.pushes(to: token).isEmpty }
                // Anything well short of the 120 s poll was woken, however slow the machine.
                #expect(arrived, "the push waited for the 120 s poll: the worker was not woken")
                #expect(ContinuousClock.now - sent < .seconds(60))
            }
        }
    }
}
