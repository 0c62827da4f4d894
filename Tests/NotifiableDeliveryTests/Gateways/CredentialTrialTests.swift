import Foundation
import NotifiableSandbox
import NotifiableTesting
import Synchronization
import Testing

@testable import NotifiableDelivery

/// Until a gateway has taken an app's credentials, pushes with them go one at a time.
@Suite(.timeLimit(.minutes(1))) struct CredentialTrialTests {
    /// Enters `count` senders at once; returns their entries in the order they came back, and whether any came back
    /// before `release` ran (after the first, the probe).
    private func enterConcurrently(
        _ trial: CredentialTrial, count: Int, release: @escaping @Sendable () -> Void
    ) async -> [CredentialTrial.Entry] {
        await withTaskGroup(of: CredentialTrial.Entry.self) { group in
            for _ in 0..<count { group.addTask { await trial.enter() } }
            var entries: [CredentialTrial.Entry] = []
            for await entry in group {
                entries.append(entry)
                if entries.count == 1 {
                    // Give the others time to queue up behind the probe.
                    try? await Task.sleep(for: .milliseconds(100))
                    release()
                }
            }
            return entries
        }
    }

    @Test func theFirstSenderProbesTheOthersWaitAndAConfirmingAnswerLetsThemAllThrough() async {
        let trial = CredentialTrial()
        let entries = await enterConcurrently(trial, count: 20) { trial.settle(confirmed: true) }
        #expect(entries.first == .probe)
        #expect(Array(entries.dropFirst()) == Array(repeating: .trusted, count: 19))
        #expect(trial.isConfirmed)
        #expect(await trial.enter() == .trusted)
    }

    @Test func aProbeThatDoesNotConfirmWakesTheWaitersToLookAgainAndTheNextOneProbes() async {
        let trial = CredentialTrial()
        let entries = await enterConcurrently(trial, count: 10) { trial.settle(confirmed: false) }
        #expect(entries.first == .probe)
        #expect(Array(entries.dropFirst()) == Array(repeating: .lookAgain, count: 9))
        #expect(!trial.isConfirmed)
        #expect(await trial.enter() == .probe)
        trial.settle(confirmed: true)
        #expect(await trial.enter() == .trusted)
    }

    @Test func aRevokedKeyCostsOneRequestWhateverTheSizeOfTheNotification() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                gateway.distrustAllKeys()  // revoked: APNs answers 403 InvalidProviderToken
                try await service.insertDevices(appID: app.app.id, count: 300, tokenSeed: 0x4030)
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "revoked", "all": true}"#)
                #expect(try await Pipeline.settled(service, id))
                let dead = try await service.deliveries(of: id, in: "dead")
                let story = try await service.describeDeliveries(of: id)
                #expect(dead == 300, "\(story)")
                #expect(
                    try await service.integer(
                        "SELECT count(*) FROM deliveries WHERE notification_id = \(id) AND reason = 'InvalidProviderToken'"
                    ) == 300)
                #expect(gateway.requestCount == 1)
            }
        }
    }

    @Test func whileTheKeyIsUntriedAnswersThatSayNothingOfItKeepPushesGoingOneAtATime() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                gateway.setObserving(statistics: true, requestLog: true)
                gateway.setLatency(.milliseconds(50))
                // APNs refuses everything as it does under load: that says nothing of the key.
                gateway.setFaults(try SandboxGatewayFaultMix.parse(["unavailable=1"], seed: 1))
                try await service.insertDevices(appID: app.app.id, count: 50, tokenSeed: 0x5030)
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "busy", "all": true}"#)
                #expect(try await service.eventually { gateway.requestCount >= 1 })
                try await Task.sleep(for: .milliseconds(300))
                gateway.setFaults(nil)
                #expect(try await Pipeline.settled(service, id))
                let sent = try await service.deliveries(of: id, in: "sent")
                let story = try await service.describeDeliveries(of: id)
                #expect(sent == 50, "\(story)")
                // One 50 ms request at a time while the key is untried: 503s each at least the latency
                // after the one before, not all 50 pushes at once. (How many fit in the 300 ms depends
                // on how late a starved machine wakes this test, so only the spacing is asserted.)
                let log = gateway.drainRequestLog()
                let firstAccepted = try #require(log.firstIndex { $0.outcome == "accepted" })
                #expect(firstAccepted >= 1)
                #expect(log[..<firstAccepted].allSatisfy { $0.outcome == "unavailable" })
                let gaps = zip(log[..<firstAccepted], log[1...firstAccepted]).map { $1.arrivedAt.timeIntervalSince($0.arrivedAt) }
                #expect(gaps.allSatisfy { $0 >= 0.045 }, "arrivals before the first accepted, seconds apart: \(gaps)")
                #expect(gateway.stats.tokensAccepted == 50)
            }
        }
    }
}
