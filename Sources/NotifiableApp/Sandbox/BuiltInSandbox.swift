import Crypto
import Foundation
import Logging
import NotifiableCore
import NotifiableDelivery
import NotifiableSandbox
import NotifiableStore

/// The sandbox a worker process carries: a fake APNs, a fake FCM and a fake push service, each started inside the
/// process on a loopback port the first time an app in sandbox mode has something for it, and
/// senders that reach them exactly as the live senders reach Apple and Google (same payloads,
/// headers, signed tokens, HTTP/2).
final class BuiltInSandbox: SandboxDelivery {
    private let gateways: SandboxGateways
    private let apns: APNsSender
    private let fcm: FCMSender
    private let webpush: SandboxWebPush

    init(webPushKeys: @escaping WebPushSender.KeysReader, logger: Logger, requestTimeout: Duration) {
        let gateways = SandboxGateways(logger: logger)
        self.gateways = gateways
        apns = APNsSender(settings: { appID in try await gateways.apnsSettings(appID: appID) }, logger: logger, requestTimeout: requestTimeout)
        fcm = FCMSender(settings: { _ in try await gateways.fcmSettings() }, logger: logger, requestTimeout: requestTimeout)
        webpush = SandboxWebPush(keys: webPushKeys, logger: logger, requestTimeout: requestTimeout)
    }

    func sender(for provider: Provider) -> (any PushSender)? {
        switch provider {
        case .apns: apns
        case .fcm: fcm
        case .webpush: webpush
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
        case .webpush:
            return await webpush.takePush(location: gatewayID)
        }
    }

    func shutdown() async {
        await apns.shutdown()
        await fcm.shutdown()
        await webpush.shutdown()
        await gateways.stop()
    }
}

/// The fake gateways, each started once on first use, and stopped with the worker.
final class SandboxGateways: Sendable {
    /// The sandbox's own provider key; the fake gateway trusts it and nothing else.
    private static let teamID = "SANDBOX000"
    private static let keyID = "SANDBOXKEY"
    private static let projectID = "notifiable-sandbox"
    private let apnsKey: P256.Signing.PrivateKey
    private let apns: StartedOnce<SandboxAPNsGateway>
    private let fcm: StartedOnce<(gateway: SandboxFCMGateway, settings: FCMSettings)>

    init(logger: Logger) {
        let apnsKey = P256.Signing.PrivateKey()
        self.apnsKey = apnsKey
        apns = StartedOnce {
            let gateway = try await SandboxAPNsGateway.start(host: "127.0.0.1", port: 0, threads: 1, logger: logger)
            gateway.trust(teamID: Self.teamID, keyID: Self.keyID, publicKey: apnsKey.publicKey)
            logger.info("sandbox APNs gateway started", metadata: ["url": "\(gateway.baseURL)"])
            return gateway
        }
        fcm = StartedOnce {
            let gateway = try await SandboxFCMGateway.start(host: "127.0.0.1", port: 0, threads: 1, logger: logger)
            let account = try gateway.makeServiceAccount(projectID: Self.projectID)
            logger.info("sandbox FCM gateway started", metadata: ["url": "\(gateway.baseURL)"])
            let settings = FCMSettings(
                serviceAccountJSON: account, projectID: Self.projectID,
                clientEmail: try SandboxFCMGateway.serviceAccountClientEmail(json: account),
                endpoint: gateway.baseURL, trustedCAPEM: gateway.certificatePEM
            )
            return (gateway, settings)
        }
    }

    /// The settings that send an app's pushes to the sandbox APNs gateway.
    func apnsSettings(appID: Int64) async throws -> APNsSettings {
        let gateway = try await apns.value()
        return APNsSettings(
            keyID: Self.keyID, teamID: Self.teamID, bundleID: "sandbox.app\(appID)", privateKeyPEM: apnsKey.pemRepresentation,
            // Both environments reach the built-in gateway, whichever a device says it is in.
            environment: .production, endpoint: gateway.baseURL, trustedCAPEM: gateway.certificatePEM, sandboxEndpoint: gateway.baseURL
        )
    }

    /// The settings that send to the sandbox FCM gateway: one service account, made at its start.
    func fcmSettings() async throws -> FCMSettings {
        try await fcm.value().settings
    }

    var startedAPNs: SandboxAPNsGateway? {
        get async { await apns.existing() }
    }

    var startedFCM: SandboxFCMGateway? {
        get async { await fcm.existing()?.gateway }
    }

    /// Stops the gateways, including one whose start is still under way.
    func stop() async {
        try? await apns.finish()?.stop()
        try? await fcm.finish()?.gateway.stop()
    }
}

/// A value made by an async start, once, when first asked for. A failed start is forgotten (only
/// the one that failed, never a newer one), so the next caller tries again.
actor StartedOnce<Value: Sendable> {
    private let start: @Sendable () async throws -> Value
    private var task: Task<Value, any Error>?
    private var finished = false

    init(_ start: @escaping @Sendable () async throws -> Value) {
        self.start = start
    }

    func value() async throws -> Value {
        guard !finished else { throw CancellationError() }
        let current = task ?? Task(operation: start)
        task = current
        do {
            return try await current.value
        } catch {
            if task == current { task = nil }
            throw error
        }
    }

    /// The value, if a start has begun (waiting for it to end); never starts one.
    func existing() async -> Value? {
        try? await task?.value
    }

    /// No start from now on; the value made (or being made), for the caller to stop.
    func finish() async -> Value? {
        finished = true
        let current = task
        task = nil
        return try? await current?.value
    }
}
