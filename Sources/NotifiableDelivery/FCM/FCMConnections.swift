import Foundation
import Logging
import NotifiableCore
import NotifiableStore

/// What the sender needs to reach FCM for one app: its service account's access tokens, the URL
/// messages go to, and the HTTP client that carries them.
struct FCMConnection: Sendable {
    let tokens: FCMAccessTokens
    let transport: any FCMTransport
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

/// The apps' FCM connections, made on first use and re-read after `maxAge` so that changed settings take
/// effect without a restart. Reading is single-flight per app: a burst of deliveries for an app that is
/// not cached reads its settings once and shares one access-token cache.
///
/// HTTP clients are shared: one trusts the system's roots and serves every app that names no CA, and one
/// is made per distinct trusted CA (a test or staging gateway, whose token endpoint it serves too). They
/// live until `shutdown()`.
actor FCMConnections {
    typealias SettingsReader = @Sendable (_ appID: Int64) async throws -> FCMSettings?
    typealias TransportMaker = @Sendable (_ trustedCAPEM: String?) throws -> any FCMTransport

    private let settings: SettingsReader
    private let maxAge: Duration
    private let requestTimeout: Duration
    private let logger: Logger
    private let makeTransport: TransportMaker
    private var connections: [Int64: FCMConnection] = [:]
    private var loading: [Int64: Task<Result<FCMConnection, MissingConnection>, Never>] = [:]
    /// Apps whose settings are to be read before their next delivery; their connections stay, so that
    /// the access token carries over while the service account is unchanged.
    /// By trusted CA PEM; "" for the system's roots.
    private var transports: [String: any FCMTransport] = [:]

    init(
        settings: @escaping SettingsReader, maxAge: Duration, requestTimeout: Duration, logger: Logger,
        makeTransport: @escaping TransportMaker
    ) {
        self.settings = settings
        self.maxAge = maxAge
        self.requestTimeout = requestTimeout
        self.logger = logger
        self.makeTransport = makeTransport
    }

    func connection(appID: Int64) async -> Result<FCMConnection, MissingConnection> {
        if let cached = connections[appID],
           MissingConnection.settingsAreFresh(loadedAt: cached.loadedAt, refused: cached.misconfiguration != nil, maxAge: maxAge) {
            return .success(cached)
        }
        if let load = loading[appID] { return await load.value }
        let load = Task { await self.load(appID: appID) }
        loading[appID] = load
        return await load.value
    }

    /// FCM refused the app's settings: the app's next deliveries stop here at once, and the
    /// settings are read again after the short wait a refused configuration gets (by then the
    /// worker has stored its mark, or an operator saved new settings).
    func refuse(appID: Int64, reason: String) {
        connections[appID]?.misconfiguration = reason
        connections[appID]?.loadedAt = .now
    }

    func shutdown() async {
        let all = Array(transports.values)
        transports = [:]
        connections = [:]
        for transport in all { await transport.shutdown() }
    }

    private func load(appID: Int64) async -> Result<FCMConnection, MissingConnection> {
        defer { loading[appID] = nil }
        let loaded: FCMSettings?
        do {
            loaded = try await settings(appID)
        } catch {
            logger.warning("cannot read FCM settings", metadata: ["app_id": "\(appID)", "error": "\(databaseErrorText(error))"])
            return .failure(.unavailable("FCM settings could not be read: \(databaseErrorText(error))"))
        }
        guard let loaded else {
            connections[appID] = nil
            return .failure(.notConfigured)
        }
        do {
            let connection = try makeConnection(loaded, reusing: connections[appID])
            connections[appID] = connection
            return .success(connection)
        } catch {
            logger.error("cannot prepare FCM for app", metadata: ["app_id": "\(appID)", "error": "\(error)"])
            return .failure(.unusable("fcm_settings_unusable: \(error)"))
        }
    }

    /// The connection for `settings`. The previous one's access tokens carry over when the service
    /// account and CA have not changed, and whether FCM accepted a message when the URL has not.
    private func makeConnection(_ settings: FCMSettings, reusing previous: FCMConnection?) throws -> FCMConnection {
        let ca = settings.trustedCAPEM.flatMap { $0.isEmpty ? nil : $0 }
        let transport = try transport(trusting: ca)
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
        var connection = FCMConnection(
            tokens: tokens, transport: transport,
            sendURL: Self.sendURL(baseURL: settings.baseURL, projectID: settings.projectID),
            serviceAccountJSON: settings.serviceAccountJSON, trustedCAPEM: ca,
            misconfiguration: settings.misconfigurationReason, settingsVersion: settings.updatedAt, loadedAt: .now
        )
        if let previous, previous.sendURL == connection.sendURL {
            connection.hasAccepted = previous.hasAccepted
        }
        return connection
    }

    private func transport(trusting ca: String?) throws -> any FCMTransport {
        if let existing = transports[ca ?? ""] { return existing }
        let made: any FCMTransport
        do {
            made = try makeTransport(ca)
        } catch {
            throw FCMSettingsProblem("trusted CA certificate cannot be used: \(error)")
        }
        transports[ca ?? ""] = made
        return made
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
