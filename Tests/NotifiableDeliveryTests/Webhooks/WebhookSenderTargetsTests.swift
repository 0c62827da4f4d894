import AsyncHTTPClient
import Foundation
import NotifiableDelivery
import NotifiableTesting
import Testing

@testable import NotifiableStore

/// The sender asks WebhookTargets again before every POST: a webhook made before
/// NOTIFIABLE_WEBHOOK_PUBLIC_TARGETS_ONLY was on, or whose name has come to resolve inside the
/// network, is not POSTed to, and the batch fails saying why.
@Suite(.timeLimit(.minutes(1))) struct WebhookSenderTargetsTests {
    static func batch(to url: String) -> ClaimedWebhookBatch {
        ClaimedWebhookBatch(
            id: 1, webhookID: 1, attempt: 1, url: url, secret: "whsec", consecutiveFailures: 0, eventIDs: [1],
            body: Array(#"{"events": []}"#.utf8)
        )
    }

    @Test func anInternalTargetIsNotPostedToAndAPublicOnlySenderSaysWhy() async throws {
        let receiver = try await FakeWebhookReceiver.start()
        let client = WebhookSender.makeHTTPClient()
        let strict = WebhookSender(client: client, requestTimeout: .seconds(5), targets: WebhookTargets(refusesInternalAddresses: true))
        let refused = await strict.send(Self.batch(to: receiver.url))
        let receivedWhenRefused = receiver.received.count
        // The same batch through a sender that allows internal targets reaches the receiver.
        let delivered = await WebhookSender(client: client, requestTimeout: .seconds(5)).send(Self.batch(to: receiver.url))
        let receivedWhenAllowed = receiver.received.count
        try await client.shutdown()
        try await receiver.stop()

        guard case .failed(nil, let error, nil) = refused else {
            Issue.record("expected a refusal, got \(refused)")
            return
        }
        #expect(error.hasPrefix("not sent: 127.0.0.1 is 127.0.0.1, an internal address"), "\(error)")
        #expect(receivedWhenRefused == 0)
        #expect(delivered == .delivered(status: 200))
        #expect(receivedWhenAllowed == 1)
    }
}
