import Foundation
import Logging
@testable import NotifiableDelivery
import NotifiableStore
import Testing

/// However many requests a delivery needs (token, send, token again, send again), it ends
/// within twice the request timeout, so a worker's lease always outlasts it.
@Suite struct FCMSenderBudgetTests {
    @Test func aSlowExchangeAndSendAndRetryEndWithinTwiceTheTimeout() async {
        // Each request takes 0.4 s and every send is refused as expired: four requests, 1.6 s.
        let transport = ScriptedFCMTransport { request in
            try await Task.sleep(for: .milliseconds(400))
            return request.url.hasSuffix("/token")
                ? .json(200, #"{"access_token":"t\#(UUID().uuidString)","expires_in":3599,"token_type":"Bearer"}"#)
                : .json(401, #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#)
        }
        let sender = FCMSender(
            settings: { _ in FCMTestAccount.settings() }, logger: Logger(label: "test.fcm"), requestTimeout: .milliseconds(500),
            settingsMaxAge: .seconds(30), makeTransport: { _ in transport }
        )
        let start = ContinuousClock.now
        let outcome = await sender.send(fcmDelivery())
        let elapsed = ContinuousClock.now - start
        guard case .retry(let reason, _) = outcome else {
            Issue.record("expected a retry after the budget ran out, got \(outcome)")
            return
        }
        #expect(reason.hasPrefix("timeout"))
        #expect(elapsed >= .milliseconds(1000))
        #expect(elapsed < .milliseconds(1400))
        await sender.shutdown()
    }
}
