import Foundation
import Logging
import NotifiableStore
import Synchronization

/// What the sender needs to reach APNs for one app: a long-lived HTTP/2 transport (TLS
/// connections multiplexing many streams), the app's JWT cache, and its topic.
struct APNsConnection: Sendable {
    let transport: any APNsTransport
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

final class AcceptanceFlag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// The apps' APNs connections, made on first use and re-read after `maxAge` so that changed
/// settings take effect without a restart.
actor APNsConnections {
    private let loadSettings: @Sendable (_ appID: Int64) async throws -> APNsSettings?
    private let maxAge: Duration
    private let logger: Logger
    private let makeTransport: @Sendable (_ baseURL: String, _ trustedCAPEM: String?) throws -> any APNsTransport
    private var connections: [Int64: APNsConnection] = [:]
    private var loading: [Int64: Task<Result<APNsConnection, MissingConnection>, Never>] = [:]
    /// Longer than any request's deadline.
    private let retireAfter: Duration

    init(
        settings: @escaping @Sendable (_ appID: Int64) async throws -> APNsSettings?, maxAge: Duration, retireAfter: Duration, logger: Logger,
        makeTransport: @escaping @Sendable (_ baseURL: String, _ trustedCAPEM: String?) throws -> any APNsTransport
    ) {
        self.loadSettings = settings
        self.maxAge = maxAge
        self.retireAfter = retireAfter
        self.logger = logger
        self.makeTransport = makeTransport
    }

    func connection(appID: Int64) async -> Result<APNsConnection, MissingConnection> {
        if let cached = connections[appID],
           MissingConnection.settingsAreFresh(loadedAt: cached.loadedAt, refused: cached.misconfiguration != nil, maxAge: maxAge) {
            return .success(cached)
        }
        // One read per app at a time: a batch's pushes all arrive at once, and a read that finished late would
        // replace a connection APNs has refused since with one that does not know it.
        if let load = loading[appID] { return await load.value }
        let load = Task { await self.load(appID: appID) }
        loading[appID] = load
        return await load.value
    }

    private func load(appID: Int64) async -> Result<APNsConnection, MissingConnection> {
        defer { loading[appID] = nil }
        let loaded: APNsSettings?
        do {
            loaded = try await loadSettings(appID)
        } catch {
            logger.warning("cannot read APNs settings", metadata: ["app_id": "\(appID)", "error": "\(databaseErrorText(error))"])
            return .failure(.unavailable("APNs settings could not be read: \(databaseErrorText(error))"))
        }
        guard let loaded else { return .failure(.notConfigured) }
        do {
            let connection = try makeConnection(loaded, reusing: connections[appID])
            connections[appID] = connection
            return .success(connection)
        } catch {
            logger.error("cannot prepare APNs for app", metadata: ["app_id": "\(appID)", "error": "\(String(reflecting: error))"])
            return .failure(.unusable("APNs settings unusable: \(error)"))
        }
    }

    /// APNs refused the app's settings: the app's next deliveries stop here at once, and the
    /// settings are read again after the short wait a refused configuration gets (by then the
    /// worker has stored its mark, or an operator saved new settings).
    func refuse(appID: Int64, reason: String) {
        connections[appID]?.misconfiguration = reason
        connections[appID]?.loadedAt = .now
    }

    func shutdown() async {
        let transports = connections.values.map(\.transport)
        connections = [:]
        for transport in transports { await transport.shutdown() }
    }

    /// An old transport may still carry requests in flight: it is shut down once they are
    /// past their deadline, so retired transports never pile up.
    private func retire(_ transport: any APNsTransport) {
        let delay = retireAfter
        Task {
            try? await Task.sleep(for: delay)
            await transport.shutdown()
        }
    }

    /// The connection for `settings`. The previous one's transport (its open TLS connections)
    /// and JWT cache carry over when what they were made from has not changed.
    private func makeConnection(_ settings: APNsSettings, reusing previous: APNsConnection?) throws -> APNsConnection {
        let baseURL = settings.baseURL.hasSuffix("/") ? String(settings.baseURL.dropLast()) : settings.baseURL
        let transport: any APNsTransport
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
        var connection = APNsConnection(
            transport: transport, tokens: tokens, baseURL: baseURL, trustedCAPEM: settings.trustedCAPEM,
            signingKey: settings.signingKey, topic: settings.bundleID,
            misconfiguration: settings.misconfigurationReason, settingsVersion: settings.updatedAt, loadedAt: .now
        )
        if let previous, previous.baseURL == baseURL, previous.topic == settings.bundleID {
            connection.hasAccepted = previous.hasAccepted
            if previous.signingKey == settings.signingKey { connection.trial = previous.trial }
        }
        return connection
    }
}

extension APNsSettings {
    /// What a JWT is made from.
    var signingKey: String { "\(keyID)|\(teamID)|\(privateKeyPEM)" }
}
