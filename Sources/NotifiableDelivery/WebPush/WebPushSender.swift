import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOSSL
import NotifiableCore
import NotifiableStore

/// Sends deliveries to browsers (RFC 8030): each message encrypted for its subscription
/// (`WebPushEncryption`), signed with the app's VAPID key (`WebPushVAPID`), and POSTed to the
/// subscription's endpoint over HTTP/2 where the push service offers it, HTTP/1.1 otherwise.
///
/// The endpoint came from a caller, so it is checked against the allowed push services again
/// before every request (the list may have changed since the device registered), and redirects
/// are never followed.
public final class WebPushSender: PushSender {
    public typealias KeysReader = @Sendable (_ deviceID: Int64) async throws -> WebPushKeys?

    private let connections: WebPushConnections
    private let keys: KeysReader
    private let client: HTTPClient
    private let route: Route
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
    public init(
        settings: @escaping @Sendable (_ appID: Int64) async throws -> WebPushSettings?, keys: @escaping KeysReader,
        route: Route, trustedCAPEM: String? = nil, logger: Logger, requestTimeout: Duration = .seconds(15),
        settingsMaxAge: Duration = .seconds(30)
    ) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let trustedCAPEM { tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(trustedCAPEM.utf8)))] }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5)))
        configuration.httpVersion = .automatic
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        connections = WebPushConnections(gateway: "Web Push", settings: settings, maxAge: settingsMaxAge, logger: logger) { settings, _ in
            try WebPushConnection(settings)
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

        var request = HTTPClientRequest(url: target)
        request.method = .POST
        request.headers.add(name: "Authorization", value: connection.authorization(audience: audience, now: now))
        request.headers.add(name: "Content-Encoding", value: "aes128gcm")
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.headers.add(name: "TTL", value: String(message.ttl))
        request.headers.add(name: "Urgency", value: message.urgency)
        if let topic = message.topic { request.headers.add(name: "Topic", value: topic) }
        request.body = .bytes(ByteBuffer(bytes: body))

        let outcome = await post(request, deliveryID: delivery.id)
        switch outcome {
        case .sent:
            connection.hasAccepted.set()
        case .misconfigured(let reason, _) where connection.hasAccepted.isSet:
            // A service that took these keys before refuses this subscription alone: it was made
            // with another VAPID key (one rotated away), and only a new subscription can help.
            return .tokenDead(reason: "vapid_mismatch: \(reason)", at: now)
        case .misconfigured(let reason, _):
            await connections.refuse(appID: delivery.appID, reason: reason)
            return .misconfigured(reason: reason, settingsVersion: connection.settingsVersion)
        default:
            break
        }
        return outcome
    }

    private func post(_ request: HTTPClientRequest, deliveryID: Int64) async -> DeliveryOutcome {
        do {
            let response = try await client.execute(request, timeout: .init(requestTimeout))
            let answer = try await response.body.collect(upTo: 4096)
            return WebPushResponseClassifier.classify(
                status: Int(response.status.code), body: String(buffer: answer).trimmingCharacters(in: .whitespacesAndNewlines),
                location: response.headers.first(name: "Location"),
                retryAfter: FCMResponseClassifier.parseRetryAfter(response.headers.first(name: "Retry-After")))
        } catch {
            logger.debug("Web Push request failed", metadata: ["delivery_id": "\(deliveryID)", "error": "\(String(reflecting: error))"])
            let reason = TransportFailure.reason(error, peer: "the push service")
            return TransportFailure.mayHaveReachedGateway(error) ? .outcomeUnknown(reason: reason) : .retry(reason: reason, retryAfter: nil)
        }
    }

    public func shutdown() async {
        _ = await connections.removeAll()
        try? await client.shutdown()
    }
}
