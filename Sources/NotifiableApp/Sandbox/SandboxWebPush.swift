import Foundation
import Logging
import NotifiableCore
import NotifiableDelivery
import NotifiableSandbox
import NotifiableStore
import Synchronization

/// Web Push in sandbox mode: a fake push service started on first use, and a sender that sends
/// every browser's messages there, encrypted with the browser's keys and signed with a key of the
/// sandbox's own, as the live sender sends to the real services.
final class SandboxWebPush: PushSender {
    private let started: StartedOnce<(gateway: SandboxWebPushGateway, sender: WebPushSender)>
    /// What each message said before it was encrypted, by its `Location`, until it is taken for the
    /// sandbox's record.
    private let plaintexts = Plaintexts()

    final class Plaintexts: Sendable {
        let byLocation = Mutex<[String: WebPushMessage]>([:])
    }

    init(keys: @escaping WebPushSender.KeysReader, logger: Logger, requestTimeout: Duration) {
        let pair = WebPushVAPID.newKeyPair()
        let settings = WebPushSettings(subject: "mailto:sandbox@localhost", publicKey: pair.publicKey, privateKeyPEM: pair.privateKeyPEM)
        let plaintexts = plaintexts
        started = StartedOnce {
            let gateway = try await SandboxWebPushGateway.start(host: "127.0.0.1", port: 0, threads: 1, logger: logger)
            logger.info("sandbox Web Push service started", metadata: ["url": "\(gateway.baseURL)"])
            let sender = try WebPushSender(
                settings: { _ in settings }, keys: keys, route: .sandbox(baseURL: gateway.baseURL), trustedCAPEM: gateway.certificatePEM,
                logger: logger, requestTimeout: requestTimeout,
                taken: { location, message in plaintexts.byLocation.withLock { $0[location] = message } })
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

    /// The push as the sandbox records it: the request's headers, and the message as the browser
    /// reads it once decrypted.
    func takePush(location: String) async -> SandboxPush? {
        guard let received = await started.existing()?.gateway.takeMessage(location: location) else { return nil }
        let sent = plaintexts.byLocation.withLock { $0.removeValue(forKey: location) }
        let payload = sent.map { String(decoding: $0.plaintext, as: UTF8.self) } ?? received.plaintext ?? ""
        // The VAPID token would sign requests for hours: operators see every header but it.
        return SandboxPush(
            provider: .webpush, token: received.subscription, headers: received.headers.filter { $0.key != "authorization" }, payload: payload)
    }

    func shutdown() async {
        guard let (gateway, sender) = await started.finish() else { return }
        await sender.shutdown()
        try? await gateway.stop()
    }
}
