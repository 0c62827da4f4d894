import Foundation
import Logging
import NIOCore
import NotifiableCore
import NotifiableStore
import Synchronization

/// Sends deliveries to browsers (RFC 8030): each message encrypted for its subscription
/// (`WebPushEncryption`), signed with the app's VAPID key (`WebPushVAPID`), and POSTed to the
/// subscription's endpoint over HTTP/2 (the client APNs and FCM use) where the push service
/// offers it, HTTP/1.1 otherwise.
///
/// The endpoint came from a caller, so it is checked against the allowed push services again
/// before every request (the list may have changed since the device registered), and redirects
/// are never followed.
public final class WebPushSender: PushSender {
    public typealias KeysReader = @Sendable (_ deviceID: Int64) async throws -> WebPushKeys?

    private let connections: WebPushConnections
    private let keys: KeysReader
    private let transport: GatewayHTTPTransport
    private let taken: (@Sendable (String, WebPushMessage) -> Void)?
    private let route: Route
    /// Requests in flight to each push service (by origin), within one HTTP/2 connection's streams.
    /// The HTTP client queues what its connections cannot carry with the request's deadline
    /// running, so a send that waited out its deadline in that queue counted as an attempt never
    /// made; waiting here costs time, not attempts, and one slow push service does not hold the
    /// others' sends.
    private let inFlight = Mutex<[String: Permits]>([:])
    static let requestsPerOrigin = 64
    private let requestTimeout: Duration
    private let logger: Logger

    /// Where requests go.
    public enum Route: Sendable {
        /// To each subscription's endpoint, when its host is one of these push services.
        case endpoints(WebPushHosts)
        /// Every request to one fake push service (`{baseURL}/push/device-{id}`), as sandbox mode sends.
        case sandbox(baseURL: String)
    }

    /// - Parameters:
    ///   - settings: reads an app's Web Push settings (nil when it has none).
    ///   - keys: reads a device's subscription keys.
    ///   - route: the push services endpoints may name, or the sandbox's.
    ///   - trustedCAPEM: a CA trusted besides the system's, for private push services and tests.
    ///   - taken: told each message a push service took, by its `Location`, with what it said before
    ///     encryption (sandbox mode shows operators that, since the push service cannot open it).
    public init(
        settings: @escaping @Sendable (_ appID: Int64) async throws -> WebPushSettings?, keys: @escaping KeysReader,
        route: Route, trustedCAPEM: String? = nil, logger: Logger, requestTimeout: Duration = .seconds(15),
        settingsMaxAge: Duration = .seconds(30), taken: (@Sendable (_ location: String, _ message: WebPushMessage) -> Void)? = nil
    ) throws {
        self.taken = taken
        // Redirects are never followed: neither client follows one.
        transport = try GatewayHTTPTransport(trustedCAPEM: trustedCAPEM, keepsSystemRoots: true, logger: logger, connectionsPerOrigin: 1)
        connections = WebPushConnections(gateway: "Web Push", settings: settings, maxAge: settingsMaxAge, logger: logger) { settings, previous in
            try WebPushConnection(settings, previous: previous)
        }
        self.keys = keys
        self.route = route
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    public func send(_ delivery: ClaimedDelivery) async -> DeliveryOutcome {
        guard !delivery.content.isBackgroundOnly, delivery.content.liveActivity == nil else {
            return .failed(
                reason: "not_shown_in_browsers: a browser shows every push it is sent, so a background update or Live Activity "
                    + "event is not sent to one")
        }
        let connection: WebPushConnection
        switch await connections.connection(appID: delivery.appID) {
        case .success(let ready): connection = ready
        case .failure(let missing):
            return missing.outcome(
                notConfigured: "webpush_not_configured: give the app a VAPID key (PUT /admin/apps/:id/webpush {\"subject\": \"mailto:…\"}) "
                    + "to send to browsers"
            )
        }
        if let misconfiguration = connection.misconfiguration { return .misconfigured(reason: misconfiguration) }

        let target: String
        switch route {
        case .endpoints(let hosts):
            guard let endpoint = URL(string: delivery.token), let host = endpoint.host, endpoint.scheme?.lowercased() == "https" else {
                return .tokenDead(reason: "invalid_endpoint: the subscription's endpoint is not an https URL", at: Date())
            }
            guard hosts.allows(host: host) else {
                return .failed(reason: "push_service_not_allowed: \(host) is not among NOTIFIABLE_WEBPUSH_ALLOWED_HOSTS; nothing was sent")
            }
            target = delivery.token
        case .sandbox(let baseURL):
            target = "\(baseURL)/push/device-\(delivery.deviceID)"
        }
        guard let url = URL(string: target), let audience = WebPushVAPID.audience(of: url) else {
            return .tokenDead(reason: "invalid_endpoint: the subscription's endpoint is not an https URL", at: Date())
        }
        let subscription: WebPushKeys
        do {
            guard let found = try await keys(delivery.deviceID) else {
                return .tokenDead(reason: "invalid_keys: the subscription has no keys; the browser must subscribe again", at: Date())
            }
            subscription = found
        } catch {
            return .retry(reason: "the subscription's keys could not be read: \(error)", retryAfter: .seconds(5))
        }

        let now = Date()
        let message = WebPushMessage(
            content: delivery.content.withBadge(delivery.badge), language: delivery.language, country: delivery.country,
            notificationID: delivery.notificationID, now: now)
        let body: [UInt8]
        do throws(WebPushEncryption.Failure) {
            guard let bytes = subscription.bytes else { throw .invalidKeys }
            body = try WebPushEncryption.encrypt(message.plaintext, browserKey: bytes.publicKey, authSecret: bytes.authSecret)
        } catch {
            if case .invalidKeys = error { return .tokenDead(reason: error.description, at: now) }
            return .failed(reason: error.description)
        }

        var headers = [
            ("authorization", connection.authorization(audience: audience, now: now)), ("content-encoding", "aes128gcm"),
            ("content-type", "application/octet-stream"), ("ttl", String(message.ttl)), ("urgency", message.urgency),
        ]
        if let topic = message.topic { headers.append(("topic", topic)) }

        let permits = inFlight.withLock { table in
            if let existing = table[audience] { return existing }
            let made = Permits(limit: Self.requestsPerOrigin)
            table[audience] = made
            return made
        }
        let outcome = await permits.withPermit { await self.post(target, headers: headers, body: body, deliveryID: delivery.id) }
        switch outcome {
        case .sent(let location):
            connection.origins.accepted(audience)
            if let location { taken?(location, message) }
        case .misconfigured(let reason, _):
            switch connection.origins.refused(audience, deviceID: delivery.deviceID) {
            case .subscriptionStale:
                // The service takes this key from other browsers: this subscription was made with
                // another key (one rotated away), and only a new subscription can help.
                return .tokenDead(reason: "vapid_mismatch: \(reason)", at: now)
            case .unknown:
                return .failed(reason: reason)
            case .keyRefused:
                await connections.refuse(appID: delivery.appID, reason: reason)
                return .misconfigured(reason: reason, settingsVersion: connection.settingsVersion)
            }
        default:
            break
        }
        return outcome
    }

    private func post(_ url: String, headers: [(String, String)], body: [UInt8], deliveryID: Int64) async -> DeliveryOutcome {
        do {
            let response = try await transport.post(url, headers: headers, body: body, deadline: requestTimeout)
            return WebPushResponseClassifier.classify(
                status: response.status,
                body: String(decoding: response.body.prefix(4096), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines),
                location: response.location, retryAfter: RetryAfter.duration(response.retryAfter))
        } catch {
            logger.debug("Web Push request failed", metadata: ["delivery_id": "\(deliveryID)", "error": "\(String(reflecting: error))"])
            let reason = TransportFailure.reason(error, peer: "the push service")
            return TransportFailure.mayHaveReachedGateway(error) ? .outcomeUnknown(reason: reason) : .retry(reason: reason, retryAfter: nil)
        }
    }

    public func shutdown() async {
        _ = await connections.removeAll()
        await transport.shutdown()
    }
}
