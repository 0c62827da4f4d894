import Logging
import NotifiableStore

/// What a sender keeps for one app between pushes: whatever reaches its gateway with the app's
/// settings, when those were read, and the gateway's refusal of them if it refused.
protocol AppConnection: Sendable {
    /// Set when the gateway refused the app's configuration; nothing is sent until settings change.
    var misconfiguration: String? { get set }
    var loadedAt: ContinuousClock.Instant { get set }
}

/// The apps' connections to one gateway, made on first use from the app's settings and re-read
/// after `maxAge`, so that changed settings take effect without a restart. Reading is single-flight
/// per app: a batch's pushes all arrive at once, and a read that finished late would replace a
/// connection the gateway has refused since with one that does not know it. How a connection is
/// made (and what carries over from the previous one) is the provider's `make`.
actor AppConnections<Settings: Sendable, Connection: AppConnection> {
    typealias SettingsReader = @Sendable (_ appID: Int64) async throws -> Settings?
    /// Makes the connection for the app's settings, from the previous one where it can.
    typealias Maker = @Sendable (_ settings: Settings, _ previous: Connection?) throws -> Connection

    /// The gateway's name in messages ("APNs", "FCM").
    private let gateway: String
    private let settings: SettingsReader
    private let make: Maker
    /// Called with a connection dropped because its app no longer has settings.
    private let dropped: @Sendable (Connection) -> Void
    private let maxAge: Duration
    private let logger: Logger
    private var connections: [Int64: Connection] = [:]
    private var loading: [Int64: Task<Result<Connection, MissingConnection>, Never>] = [:]

    init(
        gateway: String, settings: @escaping SettingsReader, maxAge: Duration, logger: Logger,
        make: @escaping Maker, dropped: @escaping @Sendable (Connection) -> Void = { _ in }
    ) {
        self.gateway = gateway
        self.settings = settings
        self.make = make
        self.dropped = dropped
        self.maxAge = maxAge
        self.logger = logger
    }

    func connection(appID: Int64) async -> Result<Connection, MissingConnection> {
        if let cached = connections[appID],
            MissingConnection.settingsAreFresh(loadedAt: cached.loadedAt, refused: cached.misconfiguration != nil, maxAge: maxAge)
        {
            return .success(cached)
        }
        if let load = loading[appID] { return await load.value }
        let load = Task { await self.load(appID: appID) }
        loading[appID] = load
        return await load.value
    }

    /// The gateway refused the app's settings: the app's next deliveries stop here at once, and the
    /// settings are read again after the short wait a refused configuration gets (by then the
    /// worker has stored its mark, or an operator saved new settings).
    func refuse(appID: Int64, reason: String) {
        connections[appID]?.misconfiguration = reason
        connections[appID]?.loadedAt = .now
    }

    /// Forgets every connection and answers them, for the sender to close what they hold.
    func removeAll() -> [Connection] {
        defer { connections = [:] }
        return Array(connections.values)
    }

    private func load(appID: Int64) async -> Result<Connection, MissingConnection> {
        defer { loading[appID] = nil }
        let loaded: Settings?
        do {
            loaded = try await settings(appID)
        } catch {
            logger.warning("cannot read \(gateway) settings", metadata: ["app_id": "\(appID)", "error": "\(databaseErrorText(error))"])
            return .failure(.unavailable("\(gateway) settings could not be read: \(databaseErrorText(error))"))
        }
        guard let loaded else {
            if let gone = connections.removeValue(forKey: appID) { dropped(gone) }
            return .failure(.notConfigured)
        }
        do {
            let connection = try make(loaded, connections[appID])
            connections[appID] = connection
            return .success(connection)
        } catch {
            logger.error("cannot prepare \(gateway) for app", metadata: ["app_id": "\(appID)", "error": "\(String(reflecting: error))"])
            return .failure(.unusable("\(gateway.lowercased())_settings_unusable: \(error)"))
        }
    }
}
