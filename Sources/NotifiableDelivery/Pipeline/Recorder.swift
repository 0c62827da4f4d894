import Foundation
import Logging
import NotifiableCore
import NotifiableStore

/// One claimed delivery and what became of its attempt.
typealias Attempt = (delivery: ClaimedDelivery, result: DeliveryResult)

/// Writes what became of a sent batch: states, dead tokens' devices, refused settings and sandbox
/// pushes in one transaction (DeliveryQueueStore.record); then counts each attempt's outcome and logs
/// what operators must hear about once (a device invalidated, an app's settings refused, a
/// notification losing deliveries).
struct Recorder: Sendable {
    let queue: DeliveryQueueStore
    let configuration: DeliveryWorkerConfiguration
    let metrics: DeliveryMetrics
    let lostDeliveries: LostDeliveryWarnings
    let logger: Logger

    func record(_ attempts: [Attempt], _ run: WorkerRun) async {
        lostDeliveries.check(attempts, logger: logger)
        let effects = await recordUntilStored(attempts.map(\.result), run)
        report(effects, attempts)
    }

    /// Pushes that went out must be recorded, or they would be sent again when their lease
    /// runs out: keep trying (also while stopping; the batch's lease is still being renewed)
    /// until the database takes them, for at most one lease's length.
    private func recordUntilStored(_ results: [DeliveryResult], _ run: WorkerRun) async -> RecordedEffects {
        let giveUp = ContinuousClock.now + configuration.lease
        var delay = Duration.milliseconds(100)
        while true {
            do {
                return try await run.step("recording a batch") { [queue] in try await queue.record(results) }
            } catch {
                guard !Task.isCancelled, ContinuousClock.now + delay < giveUp else {
                    logger.error(
                        "could not record a batch; its deliveries will be retried after their lease",
                        metadata: [
                            "count": "\(results.count)", "error": "\(databaseErrorText(error))",
                        ])
                    return RecordedEffects()
                }
                logger.warning("recording a batch failed; trying again", metadata: ["error": "\(databaseErrorText(error))"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// A dead token counts as token_invalidated only when its device was invalidated, once per
    /// device, so that outcome and notifiable_token_invalidations_total agree: a device registered
    /// again since the verdict keeps its token.
    private func report(_ effects: RecordedEffects, _ attempts: [Attempt]) {
        var counted = Set<Int64>()
        var outcomes: [DeliveryMetrics.OutcomeKey: Int] = [:]
        var retries: [Provider: Int] = [:]
        var unknown: [Provider: Int] = [:]
        var givenBack = 0
        for (delivery, result) in attempts {
            // Given back unsent: no attempt was made.
            if result.unsent {
                givenBack += 1
                continue
            }
            if result.outcomeUnknown { unknown[delivery.provider, default: 0] += 1 }
            var outcome: DeliveryMetrics.Outcome =
                switch result.state {
                case .sent: .sent
                case .retrying: .retrying
                case .dead: .dead
                default: .failed
                }
            if let dead = result.deadToken, effects.invalidatedDevices.contains(dead.deviceID), counted.insert(dead.deviceID).inserted {
                outcome = .tokenInvalidated
                metrics.tokenInvalidated(provider: delivery.provider)
                logger.info(
                    "device token invalidated",
                    metadata: [
                        "app_id": "\(delivery.appID)", "device_id": "\(delivery.deviceID)",
                        "token": "\(PushToken.logPrefix(delivery.token))", "reason": "\(dead.reason)",
                    ])
            }
            outcomes[DeliveryMetrics.OutcomeKey(appID: delivery.appID, provider: delivery.provider, outcome: outcome), default: 0] += 1
            if delivery.attempt > 1 { retries[delivery.provider, default: 0] += 1 }
        }
        metrics.attempted(outcomes, retries: retries, unknown: unknown, givenBack: givenBack)
        for refused in effects.newlyRefusedSettings {
            // Once per app, not once per delivery: a big notification would flood the log.
            logger.warning(
                "app's gateway configuration refused; its deliveries go to dead until it is fixed",
                metadata: [
                    "app_id": "\(refused.appID)", "provider": "\(refused.provider.rawValue)", "reason": "\(refused.reason)",
                ])
        }
    }
}
