import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOSSL
import NotifiableStore

/// What the sender needs to reach APNs for one app: a long-lived HTTP/2 client (one TLS
/// connection multiplexing many streams), the app's JWT cache, and its topic.
struct APNsConnection: Sendable {
    let client: HTTPClient
    let tokens: APNsTokenCache
    let baseURL: String
    let topic: String
    /// Set when APNs refused the app's configuration; nothing is sent until settings change.
    let misconfiguration: String?
    let loadedAt: ContinuousClock.Instant
}

/// The apps' APNs connections, made on first use and re-read after `maxAge` so that changed
/// settings take effect without a restart.
actor APNsConnections {
    enum Lookup {
        case ready(APNsConnection)
        case notConfigured
        case unusable(String)
    }

    private let settings: APNsSettingsStore
    private let maxAge: Duration
    private let requestTimeout: Duration
    private let logger: Logger
    private var connections: [Int64: APNsConnection] = [:]
    private var retired: [HTTPClient] = []

    init(settings: APNsSettingsStore, maxAge: Duration, requestTimeout: Duration, logger: Logger) {
        self.settings = settings
        self.maxAge = maxAge
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    func connection(appID: Int64) async -> Lookup {
        // A refused configuration is looked at again soon: an operator fixing it should not
        // have to wait out the usual cache age.
        if let cached = connections[appID],
           cached.loadedAt.duration(to: .now) < (cached.misconfiguration == nil ? maxAge : min(maxAge, .seconds(2))) {
            return .ready(cached)
        }
        do {
            guard let settings = try await settings.settings(appID: appID) else {
                return .notConfigured
            }
            let previous = connections[appID]
            let connection = try makeConnection(settings)
            connections[appID] = connection
            if let previous { retire(previous.client) }
            return .ready(connection)
        } catch {
            logger.error("cannot prepare APNs for app", metadata: ["app_id": "\(appID)", "error": "\(String(reflecting: error))"])
            return .unusable("APNs settings unusable: \(error)")
        }
    }

    func forget(appID: Int64) {
        if let connection = connections.removeValue(forKey: appID) { retire(connection.client) }
    }

    func shutdown() async {
        let clients = connections.values.map(\.client) + retired
        connections = [:]
        retired = []
        for client in clients { try? await client.shutdown() }
    }

    /// Old clients may still carry requests in flight; they are shut down with the sender.
    private func retire(_ client: HTTPClient) {
        retired.append(client)
    }

    private func makeConnection(_ settings: APNsSettings) throws -> APNsConnection {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let pem = settings.trustedCAPEM {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.timeout = .init(connect: .seconds(10), read: .nanoseconds(Int64(requestTimeout.components.seconds) * 1_000_000_000))
        configuration.connectionPool = .init(idleTimeout: .minutes(10))
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let key = try APNsJWT.privateKey(fromP8: settings.privateKeyPEM)
        return APNsConnection(
            client: client,
            tokens: APNsTokenCache(keyID: settings.keyID, teamID: settings.teamID, privateKey: key),
            baseURL: settings.baseURL.hasSuffix("/") ? String(settings.baseURL.dropLast()) : settings.baseURL,
            topic: settings.bundleID,
            misconfiguration: settings.misconfigurationReason,
            loadedAt: .now
        )
    }
}
