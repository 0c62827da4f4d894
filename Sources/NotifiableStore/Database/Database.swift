import Logging
import NotifiableCore
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The service's PostgreSQL: a connection pool on the server `DATABASE_URL` leads to.
///
/// With one host it is that host's pool, nothing more. With several (libpq's multi-host URL) it
/// pools connections to the first host whose role suits `target_session_attrs`, checked when it
/// starts, and keeps asking that server its role over a connection of its own. When the server
/// stops answering or its role no longer suits (a primary lost and a standby promoted elsewhere,
/// or a primary demoted to read-only), it asks every host in order again and moves the pool to the
/// first that suits: the old pool's connections close, and statements from then on go to the new
/// server. While none suits, statements keep failing as in any outage (the API answers 503 with
/// Retry-After) and it keeps asking.
public final class Database: Service, Sendable {
    public let servers: [DatabaseServer]
    public let target: TargetSessionAttributes
    let logger: Logger
    /// How often the server in use is asked its role, and how soon the hosts are asked again while
    /// none suits.
    let checkInterval: Duration
    /// How long one question may take, connecting included, before the server counts as not answering.
    let checkTimeout: Duration
    private let state: Mutex<State>

    private struct State {
        var client: PostgresClient
        var server: Int
        var runner: Task<Void, Never>?
        /// Moves so far: each one a new pool.
        var moves = 0
    }

    /// The servers of `url` (`DATABASE_URL`), each pool at most `poolSize` connections.
    public convenience init(
        url: String, poolSize: Int? = nil, connectTimeout: Duration? = nil, applicationName: String? = nil, logger: Logger,
        checkInterval: Duration = .milliseconds(500), checkTimeout: Duration = .seconds(2)
    ) throws {
        var (servers, target) = try DatabaseURL.servers(from: url)
        for index in servers.indices {
            if let poolSize { servers[index].client.options.maximumConnections = poolSize }
            if let connectTimeout { servers[index].client.options.connectTimeout = connectTimeout }
            // Shown in pg_stat_activity, so an operator sees which pool a session belongs to.
            if let applicationName { servers[index].client.options.additionalStartupParameters.append(("application_name", applicationName)) }
        }
        self.init(servers: servers, target: target, logger: logger, checkInterval: checkInterval, checkTimeout: checkTimeout)
    }

    /// One server, used whatever its role (never asked it): a pool and nothing more.
    public convenience init(configuration: PostgresClient.Configuration, logger: Logger) {
        let connection = PostgresConnection.Configuration(
            host: configuration.host ?? "localhost", port: configuration.port ?? 5432, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: .disable)
        self.init(
            servers: [DatabaseServer(name: configuration.host ?? "socket", client: configuration, connection: connection)], target: .any,
            logger: logger)
    }

    public init(
        servers: [DatabaseServer], target: TargetSessionAttributes, logger: Logger, checkInterval: Duration = .milliseconds(500),
        checkTimeout: Duration = .seconds(2)
    ) {
        precondition(!servers.isEmpty, "a database needs a server")
        self.servers = servers
        self.target = target
        self.logger = logger
        self.checkInterval = checkInterval
        self.checkTimeout = checkTimeout
        state = Mutex(State(client: PostgresClient(configuration: servers[0].client, backgroundLogger: logger), server: 0))
    }

    /// The pool statements go to now.
    public var client: PostgresClient { state.withLock { $0.client } }

    /// The server statements go to now.
    public var currentServer: DatabaseServer { servers[state.withLock { $0.server }] }

    /// How many times the pool has moved to another server.
    public var moves: Int { state.withLock { $0.moves } }

    /// Whether the server in use is chosen by its role (several hosts, or a role asked for).
    public var followsRoles: Bool { servers.count > 1 || target != .any }

    // MARK: - Statements, as PostgresClient takes them

    // A statement that asked the old pool for a connection as the pool moved fails with the old
    // pool's shutdown before reaching any server: it is asked of the new pool instead.

    @discardableResult
    public func query(_ query: PostgresQuery, logger: Logger? = nil, file: String = #fileID, line: Int = #line) async throws -> PostgresRowSequence {
        try await onCurrentPool { try await $0.query(query, logger: logger, file: file, line: line) }
    }

    public func execute<Statement: PostgresPreparedStatement, Row>(
        _ preparedStatement: Statement, logger: Logger? = nil, file: String = #fileID, line: Int = #line
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, Row> where Row == Statement.Row {
        try await onCurrentPool { try await $0.execute(preparedStatement, logger: logger, file: file, line: line) }
    }

    @_disfavoredOverload
    public func withConnection<Result>(_ closure: (PostgresConnection) async throws -> Result) async throws -> Result {
        let pool = client
        do {
            return try await pool.withConnection(closure)
        } catch  where Self.isShutdown(error) && client !== pool {
            return try await client.withConnection(closure)
        }
    }

    public func withConnection<Result>(
        isolation: isolated (any Actor)? = #isolation, _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        let pool = client
        do {
            return try await pool.withConnection(isolation: isolation, closure)
        } catch  where Self.isShutdown(error) && client !== pool {
            return try await client.withConnection(isolation: isolation, closure)
        }
    }

    public func withTransaction<Result>(
        logger: Logger, file: String = #file, line: Int = #line, isolation: isolated (any Actor)? = #isolation,
        _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        let pool = client
        do {
            return try await pool.withTransaction(logger: logger, file: file, line: line, isolation: isolation, closure)
        } catch  where Self.isShutdown(error) && client !== pool {
            return try await client.withTransaction(logger: logger, file: file, line: line, isolation: isolation, closure)
        }
    }

    private func onCurrentPool<T>(_ statement: (PostgresClient) async throws -> T) async throws -> T {
        let pool = client
        do {
            return try await statement(pool)
        } catch  where Self.isShutdown(error) && client !== pool {
            return try await statement(client)
        }
    }

    /// The pool's own error type is not public API.
    static func isShutdown(_ error: any Error) -> Bool {
        String(reflecting: error).contains("poolShutdown")
    }

    // MARK: - Running

    public func run() async throws {
        guard followsRoles else {
            await client.run()
            return
        }
        // The first pool runs at once: statements may already be waiting on it.
        state.withLock { state in
            if state.runner == nil {
                let client = state.client
                state.runner = Task { await client.run() }
            }
        }
        await cancelWhenGracefulShutdown { [self] in
            var watching: PostgresConnection?
            while !Task.isCancelled {
                if let connection = watching, await role(over: connection).map({ target.accepts($0, fallback: true) }) == true {
                    try? await Task.sleep(for: checkInterval)
                    continue
                }
                try? await watching?.close()
                watching = nil
                if let (index, connection) = await suitableServer() {
                    move(to: index)
                    watching = connection
                } else {
                    try? await Task.sleep(for: checkInterval)
                }
            }
            try? await watching?.close()
        }
        let runner = state.withLock { $0.runner }
        runner?.cancel()
        await runner?.value
    }

    /// Before `run()`, for a command that runs a few statements: starts on the server that suits
    /// now rather than on the first host. False when none suits (it starts on the first).
    @discardableResult
    public func chooseServer() async -> Bool {
        guard followsRoles else { return true }
        guard let (index, connection) = await suitableServer() else { return false }
        try? await connection.close()
        state.withLock { state in
            guard state.runner == nil, state.server != index else { return }
            state.client = PostgresClient(configuration: servers[index].client, backgroundLogger: logger)
            state.server = index
        }
        return true
    }

    /// Asks every server in order (for `prefer-standby`, standbys first, then any) and gives the
    /// first that suits, with the connection that asked it.
    private func suitableServer() async -> (Int, PostgresConnection)? {
        var answered: [(index: Int, connection: PostgresConnection, role: ServerRole)] = []
        defer { for other in answered { Task { try? await other.connection.close() } } }
        for index in servers.indices {
            guard let connection = await connect(to: servers[index]) else { continue }
            guard let role = await role(over: connection) else {
                try? await connection.close()
                continue
            }
            if target.accepts(role, fallback: false) { return (index, connection) }
            answered.append((index, connection, role))
        }
        if target.hasFallback, let position = answered.firstIndex(where: { target.accepts($0.role, fallback: true) }) {
            let chosen = answered.remove(at: position)
            return (chosen.index, chosen.connection)
        }
        logger.warning(
            "no database server suits target_session_attrs now; asking again",
            metadata: ["target": "\(target.rawValue)", "answered": "\(answered.count) of \(servers.count)"])
        return nil
    }

    /// Moves the pool to `index` unless it is there: a new pool runs, the old one is stopped and
    /// its connections close.
    private func move(to index: Int) {
        let old: Task<Void, Never>? = state.withLock { state in
            guard state.server != index else { return nil }
            let client = PostgresClient(configuration: servers[index].client, backgroundLogger: logger)
            let old = state.runner
            state.client = client
            state.server = index
            state.moves += 1
            state.runner = Task { await client.run() }
            return old
        }
        guard let old else { return }
        old.cancel()
        logger.notice("database pool moved", metadata: ["server": "\(servers[index].name)", "target": "\(target.rawValue)"])
    }

    private func connect(to server: DatabaseServer) async -> PostgresConnection? {
        var configuration = server.connection
        configuration.options.connectTimeout = .init(checkTimeout)
        let logger = logger
        return try? await withDeadline(checkTimeout) { [configuration] in
            try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        } late: { connection in
            Task { try? await connection.close() }
        }
    }

    private func role(over connection: PostgresConnection) async -> ServerRole? {
        let logger = logger
        return try? await withDeadline(checkTimeout) { try await ServerRole.of(connection, logger: logger) }
    }
}
