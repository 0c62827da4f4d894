import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import Synchronization

/// What the sender needs to reach FCM for one app: its service account's access tokens, the URL
/// messages go to, and the HTTP client that carries them.
struct FCMConnection: Sendable {
    let tokens: FCMAccessTokens
    let transport: any GatewayTransport
    /// `{endpoint}/v1/projects/{project_id}/messages:send`.
    let sendURL: String
    let serviceAccountJSON: String
    let trustedCAPEM: String?
    /// Set when FCM refused the app's configuration; nothing is sent until settings change.
    var misconfiguration: String?
    /// When the settings were saved: a refusal marks that version only.
    let settingsVersion: Date?
    var loadedAt: ContinuousClock.Instant
    /// Whether FCM has accepted any message over these settings (see `FCMSender`).
    var hasAccepted = AcceptanceFlag()
}

/// The apps' FCM connections (see `AppConnections`).
typealias FCMConnections = AppConnections<FCMSettings, FCMConnection>

extension AppConnections where Settings == FCMSettings, Connection == FCMConnection {
    static func fcm(
        settings: @escaping SettingsReader, maxAge: Duration, transports: FCMTransports, requestTimeout: Duration, logger: Logger
    ) -> FCMConnections {
        FCMConnections(gateway: "FCM", settings: settings, maxAge: maxAge, logger: logger) { settings, previous in
            try FCMConnection(settings, reusing: previous, transports: transports, requestTimeout: requestTimeout)
        }
    }
}

/// The HTTP clients FCM connections share: one trusts the system's roots and serves every app that
/// names no CA, and one is made per distinct trusted CA (a test or staging gateway, whose token
/// endpoint it serves too). They live until `shutdown()`.
final class FCMTransports: Sendable {
    typealias Maker = @Sendable (_ trustedCAPEM: String?) throws -> any GatewayTransport

    private let make: Maker
    /// By trusted CA PEM; "" for the system's roots.
    private let made = Mutex<[String: any GatewayTransport]>([:])

    init(make: @escaping Maker) {
        self.make = make
    }

    func transport(trusting ca: String?) throws -> any GatewayTransport {
        try made.withLock { made in
            if let existing = made[ca ?? ""] { return existing }
            let transport: any GatewayTransport
            do {
                transport = try make(ca)
            } catch {
                throw FCMSettingsProblem("trusted CA certificate cannot be used: \(error)")
            }
            made[ca ?? ""] = transport
            return transport
        }
    }

    func shutdown() async {
        let all = made.withLock { made in
            defer { made = [:] }
            return Array(made.values)
        }
        for transport in all { await transport.shutdown() }
    }
}

extension FCMConnection: AppConnection {
    /// The connection for `settings`. The previous one's access tokens carry over when the service
    /// account and CA have not changed, and whether FCM accepted a message when the URL has not.
    init(_ settings: FCMSettings, reusing previous: FCMConnection?, transports: FCMTransports, requestTimeout: Duration) throws {
        let ca = settings.trustedCAPEM.flatMap { $0.isEmpty ? nil : $0 }
        let transport = try transports.transport(trusting: ca)
        let tokens: FCMAccessTokens
        if let previous, previous.serviceAccountJSON == settings.serviceAccountJSON, previous.trustedCAPEM == ca {
            tokens = previous.tokens
        } else {
            let account: FCMServiceAccount
            do throws(FCMServiceAccountError) {
                account = try FCMServiceAccount(json: settings.serviceAccountJSON)
            } catch {
                throw FCMSettingsProblem("service account: \(error.message)")
            }
            let endpoint = FCMTokenEndpoint(account: account, transport: transport, timeout: requestTimeout)
            tokens = FCMAccessTokens { () async throws(FCMAccessTokenError) -> FCMAccessToken in try await endpoint.exchange() }
        }
        self.init(
            tokens: tokens, transport: transport,
            sendURL: Self.sendURL(baseURL: settings.baseURL, projectID: settings.projectID),
            serviceAccountJSON: settings.serviceAccountJSON, trustedCAPEM: ca,
            misconfiguration: settings.misconfigurationReason, settingsVersion: settings.updatedAt, loadedAt: .now
        )
        if let previous, previous.sendURL == sendURL {
            hasAccepted = previous.hasAccepted
        }
    }

    static func sendURL(baseURL: String, projectID: String) -> String {
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:")
        let project = projectID.addingPercentEncoding(withAllowedCharacters: allowed) ?? projectID
        return "\(base)/v1/projects/\(project)/messages:send"
    }
}

/// Settings that cannot work as stored.
struct FCMSettingsProblem: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
