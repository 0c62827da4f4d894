import Foundation
import Logging
import NotifiableStore

/// What the sender needs to reach APNs for one app: a long-lived HTTP/2 transport (TLS
/// connections multiplexing many streams), the app's JWT cache, and its topic.
struct APNsConnection: Sendable {
    let transport: any HTTP2Transport
    let tokens: APNsTokenCache
    let baseURL: String
    let trustedCAPEM: String?
    let signingKey: String
    let topic: String
    /// Set when APNs refused the app's configuration; nothing is sent until settings change.
    var misconfiguration: String?
    /// When the settings were saved: a refusal marks that version only.
    let settingsVersion: Date?
    var loadedAt: ContinuousClock.Instant
    /// Whether APNs has accepted any push over these settings (see `APNsSender`).
    var hasAccepted = AcceptanceFlag()
    /// Whether APNs has taken these credentials yet; until it has, pushes go one at a time.
    var trial = CredentialTrial()
}

/// The apps' APNs connections (see `AppConnections`).
typealias APNsConnections = AppConnections<APNsSettings, APNsConnection>

extension AppConnections where Settings == APNsSettings, Connection == APNsConnection {
    /// - Parameters:
    ///   - retireAfter: longer than any request's deadline: a replaced transport is shut down then.
    ///   - makeTransport: the transport to an APNs base URL trusting the given CA (the system's when nil).
    static func apns(
        settings: @escaping SettingsReader, maxAge: Duration, retireAfter: Duration, logger: Logger,
        makeTransport: @escaping @Sendable (_ baseURL: String, _ trustedCAPEM: String?) throws -> any HTTP2Transport
    ) -> APNsConnections {
        let retire: @Sendable (any HTTP2Transport) -> Void = { transport in
            // An old transport may still carry requests in flight: it is shut down once they are
            // past their deadline, so retired transports never pile up.
            Task {
                try? await Task.sleep(for: retireAfter)
                await transport.shutdown()
            }
        }
        return APNsConnections(
            gateway: "APNs", settings: settings, maxAge: maxAge, logger: logger,
            make: { settings, previous in try APNsConnection(settings, reusing: previous, makeTransport: makeTransport, retire: retire) },
            dropped: { retire($0.transport) }
        )
    }
}

extension APNsConnection: AppConnection {
    /// The connection for `settings`. The previous one's transport (its open TLS connections)
    /// and JWT cache carry over when what they were made from has not changed.
    init(
        _ settings: APNsSettings, reusing previous: APNsConnection?,
        makeTransport: (_ baseURL: String, _ trustedCAPEM: String?) throws -> any HTTP2Transport,
        retire: (any HTTP2Transport) -> Void
    ) throws {
        let baseURL = settings.baseURL.hasSuffix("/") ? String(settings.baseURL.dropLast()) : settings.baseURL
        let transport: any HTTP2Transport
        if let previous, previous.baseURL == baseURL, previous.trustedCAPEM == settings.trustedCAPEM {
            transport = previous.transport
        } else {
            transport = try makeTransport(baseURL, settings.trustedCAPEM)
            if let previous { retire(previous.transport) }
        }
        let tokens: APNsTokenCache
        if let previous, previous.signingKey == settings.signingKey {
            tokens = previous.tokens
        } else {
            tokens = APNsTokenCache(keyID: settings.keyID, teamID: settings.teamID, privateKey: try APNsJWT.privateKey(fromP8: settings.privateKeyPEM))
        }
        self.init(
            transport: transport, tokens: tokens, baseURL: baseURL, trustedCAPEM: settings.trustedCAPEM,
            signingKey: settings.signingKey, topic: settings.bundleID,
            misconfiguration: settings.misconfigurationReason, settingsVersion: settings.updatedAt, loadedAt: .now
        )
        if let previous, previous.baseURL == baseURL, previous.topic == settings.bundleID {
            hasAccepted = previous.hasAccepted
            if previous.signingKey == settings.signingKey { trial = previous.trial }
        }
    }
}

extension APNsSettings {
    /// What a JWT is made from.
    var signingKey: String { "\(keyID)|\(teamID)|\(privateKeyPEM)" }
}
