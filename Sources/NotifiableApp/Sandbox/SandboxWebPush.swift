import Foundation
import Logging
import NotifiableCore
import NotifiableDelivery
import NotifiableSandbox
import NotifiableStore

/// Web Push in sandbox mode: a fake push service started on first use, and a sender that sends
/// every browser's messages there, encrypted with the browser's keys and signed with a key of the
/// sandbox's own, as the live sender sends to the real services.
final class SandboxWebPush: PushSender {
    private let started: StartedOnce<(gateway: SandboxWebPushGateway, sender: WebPushSender)>

    init(keys: @escaping WebPushSender.KeysReader, logger: Logger, requestTimeout: Duration) {
        let pair = WebPushVAPID.newKeyPair()
        let settings = WebPushSettings(subject: "mailto:sandbox@localhost", publicKey: pair.publicKey, privateKeyPEM: pair.privateKeyPEM)
        started = StartedOnce {
            let gateway = try await SandboxWebPushGateway.start(host: "127.0.0.1", port: 0, threads: 1, logger: logger)
            logger.info("sandbox Web Push service started", metadata: ["url": "\(gateway.baseURL)"])
            let sender = try WebPushSender(
                settings: { _ in settings }, keys: keys, route: .sandbox(baseURL: gateway.baseURL), trustedCAPEM: gateway.certificatePEM,
                logger: logger, requestTimeout: requestTimeout)
            return (gateway, sender)
        }
    }

    func send(_ delivery: ClaimedDelivery) async -> DeliveryOutcome {
        do {
            return await try started.value().sender.send(delivery)
        } catch {
            return .retry(reason: "the sandbox push service could not start: \(error)", retryAfter: .seconds(5))
        }
    }

    func takePush(location: String) async -> SandboxPush? {
        guard let message = await started.existing()?.gateway.takeMessage(location: location) else { return nil }
        return SandboxPush(
            provider: .webpush, token: "device", headers: message.headers,
            payload: message.plaintext ?? "(\(message.body.count) encrypted bytes)")
    }

    func shutdown() async {
        guard let (gateway, sender) = await started.finish() else { return }
        await sender.shutdown()
        try? await gateway.stop()
    }
}
