import Foundation
import Logging
import NotifiableCore
import NotifiableStore

/// Broadcast channels of Live Activities: makes the channels asked for at Apple, sends the
/// broadcasts of open channels in order, and deletes a channel once its activity's end went out.
/// Each piece of work is leased (`ActivityChannelStore`), so any number of workers share it and
/// one that dies leaves its work to the next. What becomes of a broadcast is decided as for a
/// push (`DeliveryDecision`).
struct ActivityChannelStage: Sendable {
    let store: ActivityChannelStore
    /// Apple's, and the built-in gateway of apps in sandbox mode.
    let live: (any ActivityChannelGateway)?
    let sandbox: (any ActivityChannelGateway)?
    let configuration: DeliveryWorkerConfiguration
    let logger: Logger

    /// Broadcasts and channel requests are few (one per event of a followed activity, not per device).
    static let batchSize = 20

    /// How often leases run out and expiries are looked for.
    static let tidyInterval = Duration.seconds(5)

    func run(_ run: WorkerRun) async {
        var tidied = ContinuousClock.now - Self.tidyInterval
        while !run.isStopping {
            do {
                if ContinuousClock.now - tidied >= Self.tidyInterval {
                    try await run.step("tidying broadcasts") { [store] in try await store.tidyBroadcasts() }
                    tidied = .now
                }
                let channels = try await run.step("claiming channel work") { [store, configuration] in
                    try await store.claimWork(limit: Self.batchSize, lease: configuration.lease)
                }
                for work in channels where !run.isStopping { try await carry(work, run) }
                let broadcasts = try await run.step("claiming broadcasts") { [store, configuration] in
                    try await store.claimBroadcasts(limit: Self.batchSize, lease: configuration.lease)
                }
                await withTaskGroup(of: Void.self) { group in
                    for broadcast in broadcasts { group.addTask { await send(broadcast, run) } }
                }
                // Its own bell: the workers' rings for every accepted notification are not for it.
                if channels.isEmpty && broadcasts.isEmpty { await run.channels.wait(atMost: configuration.pollInterval * 4) }
            } catch {
                logger.error("channel work failed; retrying shortly", metadata: ["error": "\(databaseErrorText(error))"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Makes or deletes one channel at Apple and records the answer.
    private func carry(_ work: ActivityChannelWork, _ run: WorkerRun) async throws {
        let answer: ActivityChannelAnswer
        switch (work.action, work.sandbox ? sandbox : live) {
        case (.delete(nil), _): answer = .deleted
        case (_, nil): answer = .refused(reason: "apns_not_supported: this worker cannot reach APNs\(work.sandbox ? " in sandbox mode" : "")")
        case (.create(let storage), let gateway?): answer = await gateway.createChannel(appID: work.appID, messageStorage: storage)
        case (.delete(let channelID?), let gateway?): answer = await gateway.deleteChannel(appID: work.appID, channelID: channelID)
        }
        logger.info(
            "broadcast channel work", metadata: ["app_id": "\(work.appID)", "activity_id": "\(work.activityID)", "answer": "\(answer)"])
        try await run.step("recording channel work") { [store, configuration] in
            switch answer {
            case .created(let channelID): try await store.created(work, channelID: channelID)
            case .deleted: try await store.deleted(work)
            case .refused(let reason): try await store.refused(work, reason: reason)
            case .retry(let reason, let retryAfter):
                let policy = configuration.retryPolicy
                let next =
                    policy.nextAttempt(after: work.attempts + 1, retryAfter: retryAfter, now: Date(), expiresAt: nil)
                    ?? Date().addingTimeInterval(TimeInterval(policy.maxDelay.components.seconds))
                try await store.retry(work, at: next, reason: reason)
            }
        }
    }

    private func send(_ broadcast: ClaimedBroadcast, _ run: WorkerRun) async {
        let decision: DeliveryDecision
        var status: Int?
        if let gateway = broadcast.sandbox ? sandbox : live {
            let answer = await gateway.broadcast(broadcast)
            status = answer.status
            decision = DeliveryDecision.after(
                answer.outcome, attempt: broadcast.attempt, policy: configuration.retryPolicy, now: Date(), expiresAt: broadcast.expiresAt,
                sandbox: broadcast.sandbox)
        } else {
            decision = .unsupportedProvider(.apns, sandbox: broadcast.sandbox)
        }
        do {
            try await run.step("recording a broadcast") { [store, status] in try await store.record(broadcast, decision, gatewayStatus: status) }
        } catch {
            // Its lease runs out and the broadcast is sent again: the activity's timestamp keeps it harmless.
            logger.error("recording a broadcast failed", metadata: ["broadcast_id": "\(broadcast.id)", "error": "\(databaseErrorText(error))"])
        }
    }
}
