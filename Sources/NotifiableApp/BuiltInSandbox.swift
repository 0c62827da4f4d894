import Crypto
import Foundation
import Logging
import NotifiableCore
import NotifiableDelivery
import NotifiableFakeGateways
import NotifiableStore

/// The sandbox a worker process carries: a fake APNs and a fake FCM, each started inside the
/// process on a loopback port the first time an app in sandbox mode has something for it, and
/// senders that reach them exactly as the live senders reach Apple and Google (same payloads,
/// headers, signed tokens, HTTP/2).
final class BuiltInSandbox: SandboxDelivery {
    private let gateways: SandboxGateways
    private let apns: APNsSender
    private let fcm: FCMSender

    init(logger: Logger, requestTimeout: Duration) {
        let gateways = SandboxGateways(logger: logger)
        self.gateways = gateways
        apns = APNsSender(settings: { appID in try await gateways.apnsSettings(appID: appID) }, logger: logger, requestTimeout: requestTimeout)
        fcm = FCMSender(settings: { _ in try await gateways.fcmSettings() }, logger: logger, requestTimeout: requestTimeout)
    }

    func sender(for provider: Provider) -> (any PushSender)? {
        switch provider {
        case .apns: apns
        case .fcm: fcm
        }
    }

    func takePush(provider: Provider, gatewayID: String) async -> SandboxPush? {
        switch provider {
        case .apns:
            guard let push = await gateways.startedAPNs?.takePush(apnsID: gatewayID) else { return nil }
            return SandboxPush(provider: .apns, token: push.token, headers: push.headers, payload: push.payloadString)
        case .fcm:
            guard let message = await gateways.startedFCM?.takeMessage(named: gatewayID) else { return nil }
            return SandboxPush(provider: .fcm, token: message.token, headers: message.headers, payload: message.bodyString)
        }
    }

    func shutdown() async {
        await apns.shutdown()
        await fcm.shutdown()
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
    private var fcmStart: Task<(FakeFCMGateway, FCMSettings), any Error>?
    private(set) var startedFCM: FakeFCMGateway?

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

    /// The settings that send to the sandbox FCM gateway: one service account, made at its start.
    func fcmSettings() async throws -> FCMSettings {
        if fcmStart == nil {
            let logger = logger
            fcmStart = Task {
                let gateway = try await FakeFCMGateway.start(host: "127.0.0.1", port: 0, threads: 1, logger: logger)
                let account = try gateway.makeServiceAccount(projectID: "notifiable-sandbox")
                logger.info("sandbox FCM gateway started", metadata: ["url": "\(gateway.baseURL)"])
                let settings = FCMSettings(
                    serviceAccountJSON: account, projectID: "notifiable-sandbox",
                    clientEmail: try FakeFCMGateway.serviceAccountClientEmail(json: account),
                    endpoint: gateway.baseURL, trustedCAPEM: gateway.certificatePEM
                )
                return (gateway, settings)
            }
        }
        do {
            let (gateway, settings) = try await fcmStart!.value
            startedFCM = gateway
            return settings
        } catch {
            fcmStart = nil  // try again on the next delivery
            throw error
        }
    }

    func stop() async {
        try? await startedAPNs?.stop()
        startedAPNs = nil
        try? await startedFCM?.stop()
        startedFCM = nil
    }
}
