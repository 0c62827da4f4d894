import Foundation
import Logging
import NotifiableCore
import NotifiableStore

/// Sends deliveries to APNs over HTTP/2 with token-based authentication. The transport is a
/// dedicated client (`HTTP2Client`) that coalesces writes: against the same local gateway it
/// sent ~9,500 pushes/s where AsyncHTTPClient, opening a stream channel and flushing per
/// request, sent ~6,000.
public final class APNsSender: PushSender {
    let connections: APNsConnections
    let requestTimeout: Duration
    let logger: Logger

    /// - Parameter settings: an app's APNs settings (from `APNsSettingsStore`, or a sandbox's own).
    public init(
        settings: @escaping @Sendable (_ appID: Int64) async throws -> APNsSettings?, logger: Logger,
        requestTimeout: Duration = .seconds(15), settingsMaxAge: Duration = .seconds(30)
    ) {
        self.connections = .apns(
            settings: settings, maxAge: settingsMaxAge, retireAfter: requestTimeout * 2, logger: logger
        ) { baseURL, ca in
            try HTTP2Client(baseURL: baseURL, trustedCAPEM: ca, logger: logger)
        }
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    public func send(_ delivery: ClaimedDelivery) async -> DeliveryOutcome {
        let payload: [UInt8]
        do {
            let key = RenderedPayloadKey(provider: .apns, language: delivery.language, country: delivery.country, badge: delivery.badge)
            payload = try delivery.rendered.payload(for: key) { () throws(APNsPayloadError) in
                try APNsPayload.encode(
                    content: delivery.content.withBadge(delivery.badge), language: delivery.language, country: delivery.country,
                    notificationID: delivery.notificationID
                )
            }
        } catch {
            return .failed(reason: error.description)
        }

        var connection: APNsConnection
        var entry: CredentialTrial.Entry
        repeat {
            switch await connections.connection(appID: delivery.appID) {
            case .success(let ready): connection = ready
            case .failure(let missing):
                return missing.outcome(notConfigured: "apns_not_configured: set the app's APNs key with `notifiable apps set-apns`")
            }
            if let misconfiguration = connection.misconfiguration {
                return .misconfigured(reason: misconfiguration)
            }
            entry = await connection.trial.enter()
        } while entry == .lookAgain
        var outcome = await send(delivery, payload: payload, over: connection)
        if delivery.content.liveActivity != nil, case .tokenDead(let reason, _) = outcome {
            // The activity's token is gone (it ended on the device), not the device's: the push
            // fails, and the activity's next event drops the token (LiveActivityStore).
            outcome = .failed(reason: "\(LiveActivityStore.tokenGonePrefix): \(reason)")
        }
        if entry == .probe {
            switch outcome {
            case .sent, .failed, .tokenDead: connection.trial.settle(confirmed: true)
            case .retry, .outcomeUnknown, .refreshCredentialsAndRetry, .misconfigured: connection.trial.settle(confirmed: false)
            }
        }
        return outcome
    }

    /// Sends to the host of the device's environment (the app's when it did not say). A
    /// `BadDeviceToken` there is asked again of the other environment's host, with the same key,
    /// before it counts: a debug build's token is the sandbox's, and the device may not have said.
    private func send(_ delivery: ClaimedDelivery, payload: [UInt8], over connection: APNsConnection) async -> DeliveryOutcome {
        let jwt = await connection.tokens.token()
        let environment = delivery.apnsEnvironment ?? connection.environment
        let outcome = await attempt(delivery, payload: payload, jwt: jwt, to: environment, over: connection)
        guard case .tokenDead(let reason, nil) = outcome, reason == APNsReason.badDeviceToken.rawValue else { return outcome }
        if connection.reachesOtherEnvironment {
            let elsewhere = await attempt(delivery, payload: payload, jwt: jwt, to: environment.other, over: connection)
            switch elsewhere {
            case .sent, .retry, .outcomeUnknown:
                return elsewhere
            case .refreshCredentialsAndRetry(let reason):
                // Not an answer about the token: ask both hosts again.
                return .retry(reason: reason, retryAfter: nil)
            case .failed, .tokenDead, .misconfigured:
                break
            }
        }
        if !connection.hasAccepted.isSet {
            // Every token of an app looks bad when its settings name the wrong key or topic for
            // both hosts. Until APNs has accepted one push over these settings, a bad token is
            // retried rather than invalidated.
            return .retry(
                reason: "BadDeviceToken before APNs accepted any push for this app; held back in case the settings are wrong",
                retryAfter: nil
            )
        }
        return .tokenDead(
            reason: connection.reachesOtherEnvironment ? "\(reason) from both the sandbox and the production host" : reason, at: nil)
    }

    /// One request to `environment`'s host. Only the app's own environment may mark its settings
    /// refused: the other host is asked on the device's behalf, and the key may not serve it.
    private func attempt(
        _ delivery: ClaimedDelivery, payload: [UInt8], jwt: String, to environment: APNsEnvironment, over connection: APNsConnection
    ) async -> DeliveryOutcome {
        var headers = APNsRequestHeaders.make(
            content: delivery.content, topic: connection.topic, deliveryID: delivery.id, notificationID: delivery.notificationID, now: Date()
        )
        headers.append(("authorization", "bearer \(jwt)"))
        do {
            let response = try await connection.transport(to: environment).send(
                .apnsPush(deviceToken: delivery.token, headers: headers, payload: payload), deadline: requestTimeout
            )
            let outcome = APNsResponseClassifier.classify(
                status: response.status, body: response.body, retryAfter: response.retryAfter, apnsID: response.header("apns-id")
            )
            switch outcome {
            case .sent:
                connection.hasAccepted.set()
            case .refreshCredentialsAndRetry:
                await connection.tokens.refresh(rejected: jwt)
            case .misconfigured(let reason, _) where environment == connection.environment:
                // APNs itself refused the settings (the worker marks them): the app's other
                // deliveries stop here instead of going to APNs.
                await connections.refuse(appID: delivery.appID, reason: reason)
                return .misconfigured(reason: reason, settingsVersion: connection.settingsVersion)
            default:
                break
            }
            return outcome
        } catch {
            logger.debug("APNs request failed", metadata: ["delivery_id": "\(delivery.id)", "error": "\(String(reflecting: error))"])
            return APNsResponseClassifier.classify(transportError: error)
        }
    }

    public func shutdown() async {
        for connection in await connections.removeAll() {
            await connection.transport.shutdown()
            await connection.otherTransport?.shutdown()
            if connection.channelBaseURL != connection.baseURL { await connection.channelTransport.shutdown() }
        }
    }
}
