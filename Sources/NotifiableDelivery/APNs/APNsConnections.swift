import Foundation
import Logging
import NotifiableCore
import NotifiableStore

/// What the sender needs to reach APNs for one app: a long-lived HTTP/2 transport (TLS
/// connections multiplexing many streams), the app's JWT cache, and its topic.
struct APNsConnection: Sendable {
    /// To the app's own environment.
    let transport: any HTTP2Transport
    /// To the other environment, for devices that say their token is of it (debug builds of an
    /// app in production, or the reverse) and for a token one host does not know; nil when the
    /// settings cannot reach it (`APNsSettings.otherBaseURL`). It connects on its first request only.
    let otherTransport: (any HTTP2Transport)?
    /// To Apple's channel management API (broadcast channels); the app's own transport when its
    /// endpoint serves both. It connects on its first request only.
    let channelTransport: any HTTP2Transport
    let channelBaseURL: String
    let environment: APNsEnvironment
    let tokens: APNsTokenCache
    let baseURL: String
    let otherBaseURL: String?
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
            dropped: {
                retire($0.transport)
                if let other = $0.otherTransport { retire(other) }
                if $0.channelBaseURL != $0.baseURL { retire($0.channelTransport) }
            }
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
        func trimmed(_ url: String) -> String { url.hasSuffix("/") ? String(url.dropLast()) : url }
        let baseURL = trimmed(settings.baseURL)
        let otherBaseURL = settings.otherBaseURL.map(trimmed)
        let transport: any HTTP2Transport
        if let previous, previous.baseURL == baseURL, previous.trustedCAPEM == settings.trustedCAPEM {
            transport = previous.transport
        } else {
            transport = try makeTransport(baseURL, settings.trustedCAPEM)
            if let previous { retire(previous.transport) }
        }
        let otherTransport: (any HTTP2Transport)?
        if let previous, previous.otherBaseURL == otherBaseURL, previous.trustedCAPEM == settings.trustedCAPEM {
            otherTransport = previous.otherTransport
        } else {
            otherTransport = try otherBaseURL.map { try makeTransport($0, settings.trustedCAPEM) }
            if let old = previous?.otherTransport { retire(old) }
        }
        let channelBaseURL = trimmed(settings.channelManagementBaseURL)
        let channelTransport: any HTTP2Transport
        if channelBaseURL == baseURL {
            channelTransport = transport
        } else if let previous, previous.channelBaseURL == channelBaseURL, previous.trustedCAPEM == settings.trustedCAPEM {
            channelTransport = previous.channelTransport
        } else {
            channelTransport = try makeTransport(channelBaseURL, settings.trustedCAPEM)
        }
        if let previous, previous.channelBaseURL != previous.baseURL,
            previous.channelBaseURL != channelBaseURL
                || previous.trustedCAPEM != settings.trustedCAPEM
        {
            retire(previous.channelTransport)
        }
        let tokens: APNsTokenCache
        if let previous, previous.signingKey == settings.signingKey {
            tokens = previous.tokens
        } else {
            tokens = APNsTokenCache(keyID: settings.keyID, teamID: settings.teamID, privateKey: try APNsJWT.privateKey(fromP8: settings.privateKeyPEM))
        }
        self.init(
            transport: transport, otherTransport: otherTransport, channelTransport: channelTransport, channelBaseURL: channelBaseURL,
            environment: settings.environment, tokens: tokens, baseURL: baseURL,
            otherBaseURL: otherBaseURL, trustedCAPEM: settings.trustedCAPEM,
            signingKey: settings.signingKey, topic: settings.bundleID,
            misconfiguration: settings.misconfigurationReason, settingsVersion: settings.updatedAt, loadedAt: .now
        )
        if let previous, previous.baseURL == baseURL, previous.topic == settings.bundleID {
            hasAccepted = previous.hasAccepted
            if previous.signingKey == settings.signingKey { trial = previous.trial }
        }
    }
}

extension APNsConnection {
    /// The transport to `environment`'s host; the app's own when the device did not say.
    /// The transport to `environment`'s host: the app's own when the device did not say, or when
    /// the settings cannot reach the other host.
    func transport(to environment: APNsEnvironment?) -> any HTTP2Transport {
        guard let environment, environment != self.environment, let otherTransport else { return transport }
        return otherTransport
    }

    /// Whether a token the app's host refused can be asked of the other environment's host.
    var reachesOtherEnvironment: Bool { otherTransport != nil }
}

extension APNsSettings {
    /// What a JWT is made from.
    var signingKey: String { "\(keyID)|\(teamID)|\(privateKeyPEM)" }
}
