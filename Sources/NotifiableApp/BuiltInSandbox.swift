import Crypto
import Foundation
import Logging
import NotifiableCore
import NotifiableDelivery
import NotifiableFakeGateways
import NotifiableStore

/// The sandbox a worker process carries: the fake APNs gateway, started inside the process on
/// a loopback port the first time an app in sandbox mode has something to send, and a sender
/// that reaches it exactly as the live sender reaches Apple (same payloads, headers, JWTs, HTTP/2).
final class BuiltInSandbox: SandboxDelivery {
    private let gateways: SandboxGateways
    private let apns: APNsSender

    init(logger: Logger, requestTimeout: Duration) {
        let gateways = SandboxGateways(logger: logger)
        self.gateways = gateways
        apns = APNsSender(settings: { appID in try await gateways.apnsSettings(appID: appID) }, logger: logger, requestTimeout: requestTimeout)
    }

    func sender(for provider: Provider) -> (any PushSender)? {
        switch provider {
        case .apns: apns
        case .fcm: nil
        }
    }

    func takePush(provider: Provider, gatewayID: String) async -> SandboxPush? {
        switch provider {
        case .apns:
            guard let push = await gateways.startedAPNs?.takePush(apnsID: gatewayID) else { return nil }
            return SandboxPush(provider: .apns, token: push.token, headers: push.headers, payload: push.payloadString)
        case .fcm:
            return nil
        }
    }

    func shutdown() async {
        await apns.shutdown()
        await gateways.stop()
    }
}

/// The fake gateways, each started once on first use.
actor SandboxGateways {
    /// The sandbox's own provider key; the fake gateway trusts it and nothing else.
    private static let teamID = "SANDBOX000"
    private static let keyID = "SANDBOXKEY"
    private let apnsKey = P256.Signing.PrivateKey()
    private let logger: Logger
    private var apnsStart: Task<FakeAPNsGateway, any Error>?
    private(set) var startedAPNs: FakeAPNsGateway?

    init(logger: Logger) {
        self.logger = logger
    }

    /// The settings that send an app's pushes to the sandbox APNs gateway.
    func apnsSettings(appID: Int64) async throws -> APNsSettings {
        let gateway = try await apnsGateway()
        return APNsSettings(
            keyID: Self.keyID, teamID: Self.teamID, bundleID: "sandbox.app\(appID)", privateKeyPEM: apnsKey.pemRepresentation,
            environment: .sandbox, endpoint: gateway.baseURL, trustedCAPEM: gateway.certificatePEM
        )
    }

    private func apnsGateway() async throws -> FakeAPNsGateway {
        if let startedAPNs { return startedAPNs }
        if apnsStart == nil {
            let key = apnsKey.publicKey, logger = logger
            apnsStart = Task {
                let gateway = try await FakeAPNsGateway.start(host: "127.0.0.1", port: 0, threads: 1, logger: logger)
                gateway.trust(teamID: Self.teamID, keyID: Self.keyID, publicKey: key)
                logger.info("sandbox APNs gateway started", metadata: ["url": "\(gateway.baseURL)"])
                return gateway
            }
        }
        do {
            let gateway = try await apnsStart!.value
            startedAPNs = gateway
            return gateway
        } catch {
            apnsStart = nil  // try again on the next delivery
            throw error
        }
    }

    func stop() async {
        try? await startedAPNs?.stop()
        startedAPNs = nil
    }
}
