import Foundation
import Logging
import NotifiableStore
import Testing

@testable import NotifiableDelivery

/// However many requests a delivery needs (token, send, token again, send again), it ends
/// within twice the request timeout, so a worker's lease always outlasts it.
@Suite struct FCMSenderBudgetTests {
    @Test func aSendThatHangsEndsWithinTwiceTheTimeout() async {
        // A send that never answers (and ignores its own deadline, as a stuck connection might).
        let transport = ScriptedFCMTransport { request in
            if request.url.hasSuffix("/token") {
                return .json(200, #"{"access_token":"t\#(UUID().uuidString)","expires_in":3599,"token_type":"Bearer"}"#)
            }
            try await Task.sleep(for: .seconds(60))
            return .json(200, #"{"name":"projects/p/messages/1"}"#)
        }
        let sender = FCMSender(
            settings: { _ in FCMTestAccount.settings() }, logger: Logger(label: "test.fcm"), requestTimeout: .milliseconds(500),
            settingsMaxAge: .seconds(30), makeTransport: { _ in transport }
        )
        let start = ContinuousClock.now
        let outcome = await sender.send(fcmDelivery())
        let elapsed = ContinuousClock.now - start
        // FCM may have taken it while it hung: tried again, its outcome unknown.
        guard case .outcomeUnknown(let reason) = outcome else {
            Issue.record("expected a retry of unknown outcome after the budget ran out, got \(outcome)")
            return
        }
        #expect(reason.hasPrefix("timeout"))
        #expect(elapsed >= .milliseconds(1000))
        // Far sooner than the hung send would answer, with room for a busy machine.
        #expect(elapsed < .seconds(20))
        await sender.shutdown()
    }
}
