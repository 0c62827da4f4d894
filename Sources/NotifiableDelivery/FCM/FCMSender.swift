import Foundation
import Logging
import NotifiableCore
import NotifiableStore

/// Sends deliveries to Android devices through FCM's HTTP v1 API (`messages:send`), authenticated with an
/// OAuth2 access token of the app's service account. Requests go over the HTTP/2 client APNs uses
/// (`GatewayHTTPTransport`), so many sends share a few connections; HTTP/1.1 where a server offers only that.
public final class FCMSender: PushSender {
    private let connections: FCMConnections
    private let transports: FCMTransports
    private let streams = FCMStreamPermits.make()
    private let budgets = DeadlineWatch()
    private let requestTimeout: Duration
    private let logger: Logger

    /// - Parameters:
    ///   - settings: reads an app's FCM settings (nil when it has none).
    ///   - requestTimeout: the deadline of every request, to FCM and to token endpoints.
    ///   - settingsMaxAge: how long an app's settings are used before they are read again.
    public convenience init(
        settings: @escaping @Sendable (_ appID: Int64) async throws -> FCMSettings?, logger: Logger,
        requestTimeout: Duration = .seconds(15), settingsMaxAge: Duration = .seconds(30)
    ) {
        self.init(
            settings: settings, logger: logger, requestTimeout: requestTimeout, settingsMaxAge: settingsMaxAge
        ) { trustedCAPEM in
            try GatewayHTTPTransport(trustedCAPEM: trustedCAPEM, logger: logger)
        }
    }

    init(
        settings: @escaping @Sendable (_ appID: Int64) async throws -> FCMSettings?, logger: Logger,
        requestTimeout: Duration, settingsMaxAge: Duration,
        makeTransport: @escaping @Sendable (_ trustedCAPEM: String?) throws -> any GatewayTransport
    ) {
        let transports = FCMTransports(make: makeTransport)
        self.transports = transports
        self.connections = .fcm(
            settings: settings, maxAge: settingsMaxAge, transports: transports, requestTimeout: requestTimeout, logger: logger
        )
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    /// One delivery may take an access-token exchange, a send, a second exchange and a second
    /// send: all of it ends within twice the request timeout, as an APNs send does. The wait for
    /// a stream comes before that budget (the worker renews the batch's lease meanwhile).
    public func send(_ delivery: ClaimedDelivery) async -> DeliveryOutcome {
        let budget = requestTimeout * 2
        return await streams.withPermit {
            (try? await budgets.run(budget) { await self.sendWithoutBudget(delivery) })
                ?? .outcomeUnknown(reason: "timeout: sending to FCM took more than \(budget.components.seconds) s")
        }
    }

    private func sendWithoutBudget(_ delivery: ClaimedDelivery) async -> DeliveryOutcome {
        let connection: FCMConnection
        switch await connections.connection(appID: delivery.appID) {
        case .success(let ready): connection = ready
        case .failure(let missing):
            return missing.outcome(
                notConfigured: "fcm_not_configured: set the app's FCM service account (a private key from the Firebase console) "
                    + "to send to Android devices"
            )
        }
        if let misconfiguration = connection.misconfiguration {
            return .misconfigured(reason: misconfiguration)
        }

        let body: [UInt8]
        do throws(FCMMessageError) {
            let now = Date()
            var key = FCMMessage.sharedPartKey(
                content: delivery.content, language: delivery.language, country: delivery.country, now: now, platform: delivery.platform
            )
            key.badge = delivery.badge
            let upToToken = try delivery.rendered.payload(for: key) { () throws(FCMMessageError) in
                try FCMMessage.upToToken(
                    content: delivery.content.withBadge(delivery.badge), language: delivery.language, country: delivery.country,
                    notificationID: delivery.notificationID, now: now, platform: delivery.platform
                )
            }
            body = FCMMessage.body(upToToken: upToToken, token: delivery.token)
        } catch {
            return .failed(reason: error.description)
        }

        var outcome: DeliveryOutcome
        do throws(FCMAccessTokenError) {
            let token = try await connection.tokens.token()
            outcome = await post(body, token: token, over: connection, deliveryID: delivery.id)
            if case .refreshCredentialsAndRetry = outcome {
                // FCM no longer takes the token (expired or revoked early): one new token, one more try.
                let fresh = try await connection.tokens.refresh(rejected: token)
                outcome = await post(body, token: fresh, over: connection, deliveryID: delivery.id)
                if case .refreshCredentialsAndRetry(let reason) = outcome {
                    outcome = .misconfigured(
                        reason: "\(reason): FCM refused a fresh access token; check that the service account may send "
                            + "messages for this project"
                    )
                }
            }
        } catch {
            // A refused service account is not read again at once: the token cache remembers the refusal
            // for a while, so the app's other deliveries stop without asking the token endpoint each.
            switch error {
            case .misconfigured(let reason): return .misconfigured(reason: reason, settingsVersion: connection.settingsVersion)
            case .unavailable(let reason, let retryAfter): return .retry(reason: reason, retryAfter: retryAfter)
            }
        }

        switch outcome {
        case .sent:
            connection.hasAccepted.set()
        case .misconfigured(let reason, _):
            // FCM itself refused the settings (the worker marks them): the app's other deliveries stop
            // here instead of going to FCM.
            await connections.refuse(appID: delivery.appID, reason: reason)
            return .misconfigured(reason: reason, settingsVersion: connection.settingsVersion)
        case .tokenDead(let reason, _) where reason.hasPrefix("SENDER_ID_MISMATCH") && !connection.hasAccepted.isSet:
            // Every token of an app looks foreign when its service account belongs to another Firebase
            // project. Until FCM has accepted one message over these settings, a mismatch is retried
            // rather than taken as a dead token.
            return .retry(
                reason: "\(reason) before FCM accepted any message for this app; held back in case the service account is "
                    + "of another Firebase project",
                retryAfter: nil
            )
        case .tokenDead(let reason, _) where delivery.content.liveActivity != nil:
            // FCM does not say whether the device's token or the activity's is gone. The activity's is
            // the likelier (it ends with the activity): its push fails and the activity's next event
            // drops it (LiveActivityStore); the device stays, and its next notification tells.
            return .failed(reason: "\(LiveActivityStore.tokenGonePrefix): \(reason)")
        default:
            break
        }
        return outcome
    }

    public func shutdown() async {
        _ = await connections.removeAll()
        await transports.shutdown()
    }

    private func post(_ body: [UInt8], token: String, over connection: FCMConnection, deliveryID: Int64) async -> DeliveryOutcome {
        do {
            let response = try await connection.transport.post(
                connection.sendURL,
                headers: [("authorization", "Bearer \(token)"), ("content-type", "application/json; charset=utf-8")],
                body: body, deadline: requestTimeout
            )
            return FCMResponseClassifier.classify(status: response.status, body: response.body, retryAfter: response.retryAfter)
        } catch {
            logger.debug("FCM request failed", metadata: ["delivery_id": "\(deliveryID)", "error": "\(String(reflecting: error))"])
            return FCMResponseClassifier.classify(transportError: error)
        }
    }
}
