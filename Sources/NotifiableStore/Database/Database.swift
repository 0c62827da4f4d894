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
    /// Whether statements may be prepared by name on a connection and run again later: not behind
    /// a pooler in transaction mode (`NOTIFIABLE_DATABASE_POOL_MODE=transaction`), which may run
    /// the next statement on a server connection that never prepared it.
    public let preparesStatements: Bool
    private let state: Mutex<State>

    /// How long a pool moved away from may finish the statements under way on it before it stops.
    let drainLimit: Duration = .seconds(30)

    private struct State {
        var pool: Pool
        var runner: Task<Void, Never>?
        /// Pools moved away from, finishing their statements.
        var retired: [Task<Void, Never>] = []
        /// Moves so far: each one a new pool.
        var moves = 0
    }

    /// One server's pool, with the statements under way on it: a pool moved away from stops once
    /// they have ended (on a lost server they fail by themselves), not under them.
    private final class Pool: Sendable {
        let client: PostgresClient
        let server: Int
        let underWay = Atomic<Int>(0)

        init(_ client: PostgresClient, server: Int) {
            self.client = client
            self.server = server
        }

        func enter() { underWay.add(1, ordering: .relaxed) }
        func leave() { underWay.subtract(1, ordering: .relaxed) }
    }

    /// The servers of `url` (`DATABASE_URL`), each pool at most `poolSize` connections.
    public convenience init(
        url: String, poolSize: Int? = nil, connectTimeout: Duration? = nil, applicationName: String? = nil, preparesStatements: Bool = true,
        logger: Logger, checkInterval: Duration = .milliseconds(500), checkTimeout: Duration = .seconds(2)
    ) throws {
        var (servers, target) = try DatabaseURL.servers(from: url)
        for index in servers.indices {
            if let poolSize { servers[index].client.options.maximumConnections = poolSize }
            if let connectTimeout { servers[index].client.options.connectTimeout = connectTimeout }
            // Shown in pg_stat_activity, so an operator sees which pool a session belongs to.
            if let applicationName { servers[index].client.options.additionalStartupParameters.append(("application_name", applicationName)) }
        }
        self.init(
            servers: servers, target: target, preparesStatements: preparesStatements, logger: logger, checkInterval: checkInterval,
            checkTimeout: checkTimeout)
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
        servers: [DatabaseServer], target: TargetSessionAttributes, preparesStatements: Bool = true, logger: Logger,
        checkInterval: Duration = .milliseconds(500), checkTimeout: Duration = .seconds(2)
    ) {
        precondition(!servers.isEmpty, "a database needs a server")
        self.servers = servers
        self.target = target
        self.preparesStatements = preparesStatements
        self.logger = logger
        self.checkInterval = checkInterval
        self.checkTimeout = checkTimeout
        state = Mutex(State(pool: Pool(PostgresClient(configuration: servers[0].client, backgroundLogger: logger), server: 0)))
    }

    /// The pool statements go to now.
    public var client: PostgresClient { pool.client }

    private var pool: Pool { state.withLock { $0.pool } }

    /// The server statements go to now.
    public var currentServer: DatabaseServer { servers[pool.server] }

    /// How many times the pool has moved to another server.
    public var moves: Int { state.withLock { $0.moves } }

    /// Whether the server in use is chosen by its role (several hosts, or a role asked for).
    public var followsRoles: Bool { servers.count > 1 || target != .any }

    // MARK: - Statements, as PostgresClient takes them

    // A statement that asked the old pool for a connection as the pool moved fails with the old
    // pool's shutdown before reaching any server: it is asked of the new pool instead. Only then:
    // a closure that began is never run twice. The pool's identity is compared first, so the
    // error's costly description is read only for a statement caught in a move.

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
        let pool = self.pool
        pool.enter()
        defer { pool.leave() }
        var began = false
        do {
            return try await pool.client.withConnection { connection in
                began = true
                return try await closure(connection)
            }
        } catch  where !began && self.pool !== pool && Self.isShutdown(error) {
            return try await self.pool.client.withConnection(closure)
        }
    }

    public func withConnection<Result>(
        isolation: isolated (any Actor)? = #isolation, _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        let pool = self.pool
        pool.enter()
        defer { pool.leave() }
        var began = false
        do {
            return try await pool.client.withConnection(isolation: isolation) { connection in
                began = true
                return try await closure(connection)
            }
        } catch  where !began && self.pool !== pool && Self.isShutdown(error) {
            return try await self.pool.client.withConnection(isolation: isolation, closure)
        }
    }

    public func withTransaction<Result>(
        logger: Logger, file: String = #file, line: Int = #line, isolation: isolated (any Actor)? = #isolation,
        _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        let pool = self.pool
        pool.enter()
        defer { pool.leave() }
        var began = false
        do {
            return try await pool.client.withTransaction(logger: logger, file: file, line: line, isolation: isolation) { connection in
                began = true
                return try await closure(connection)
            }
        } catch  where !began && self.pool !== pool && Self.isShutdown(error) {
            return try await self.pool.client.withTransaction(logger: logger, file: file, line: line, isolation: isolation, closure)
        }
    }

    /// Runs one writing statement and answers its rows once it has committed. PostgreSQL sends an
    /// autocommit statement's rows and CommandComplete before it commits (the extended protocol
    /// commits at Sync), and PostgresNIO answers then: a commit that fails afterwards (a primary
    /// lost while its synchronous standby confirms) would go unseen, and what was answered or
    /// acted on would not be in the database. Here rows come back only after COMMIT has returned.
    public func committing(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await committing(logger: logger) { connection in
            var rows: [PostgresRow] = []
            for try await row in try await connection.query(query, logger: logger) { rows.append(row) }
            return rows
        }
    }

    /// Runs `body` in a transaction and answers its result once COMMIT has returned (see
    /// `committing(_:logger:)`). The statement's own error is thrown as it is. A failed
    /// transaction is rolled back within two seconds or its connection closed: on a connection
    /// the server has just ended, postgres-nio 1.33 would wait for ever for the ROLLBACK's answer.
    public func committing<Result: Sendable>(
        logger: Logger, _ body: @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection { (connection: PostgresConnection) async throws -> Result in
            try await connection.query("BEGIN", logger: logger)
            let result: Result
            do {
                result = try await body(connection)
            } catch {
                if !connection.isClosed {
                    do {
                        try await withDeadline(.seconds(2)) { _ = try await connection.query("ROLLBACK", logger: logger) }
                    } catch {
                        try? await connection.close()
                    }
                }
                throw error
            }
            try await connection.query("COMMIT", logger: logger)
            return result
        }
    }

    private func onCurrentPool<T>(_ statement: (PostgresClient) async throws -> T) async throws -> T {
        let pool = self.pool
        pool.enter()
        defer { pool.leave() }
        do {
            return try await statement(pool.client)
        } catch  where self.pool !== pool && Self.isShutdown(error) {
            return try await statement(self.pool.client)
        }
    }

    /// The pool's own error type is not public API; it is thrown when a connection is asked of a
    /// pool that is shutting down, before any statement is sent.
    public static func isShutdown(_ error: any Error) -> Bool {
        String(reflecting: error).contains("ConnectionPoolError(base: _ConnectionPoolModule.ConnectionPoolError.Base.poolShutdown)")
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
                let client = state.pool.client
                state.runner = Task { await client.run() }
            }
        }
        await cancelWhenGracefulShutdown { [self] in
            var watching: PostgresConnection?
            var checksOnFallback = 0
            while !Task.isCancelled {
                let role: ServerRole? = if let connection = watching { await role(over: connection) } else { nil }
                if let role, target.accepts(role, fallback: true) {
                    // On a fallback server (prefer-standby on a primary), look for a better one now and then.
                    checksOnFallback = target.accepts(role, fallback: false) ? 0 : checksOnFallback + 1
                    if checksOnFallback < 20 {
                        try? await Task.sleep(for: checkInterval)
                        continue
                    }
                    checksOnFallback = 0
                }
                if Task.isCancelled { break }
                if let (index, connection) = await suitableServer() {
                    try? await watching?.close()
                    move(to: index, oldServerAnswered: role != nil)
                    watching = connection
                } else {
                    try? await watching?.close()
                    watching = nil
                    try? await Task.sleep(for: checkInterval)
                }
            }
            try? await watching?.close()
        }
        let runners = state.withLock { state in [state.runner].compactMap { $0 } + state.retired }
        for runner in runners { runner.cancel() }
        for runner in runners { await runner.value }
    }

    /// Before `run()`, for a command that runs a few statements: starts on the server that suits
    /// now rather than on the first host. False when none suits (it starts on the first).
    @discardableResult
    public func chooseServer() async -> Bool {
        guard followsRoles else { return true }
        guard let (index, connection) = await suitableServer() else { return false }
        try? await connection.close()
        state.withLock { state in
            guard state.runner == nil, state.pool.server != index else { return }
            state.pool = Pool(PostgresClient(configuration: servers[index].client, backgroundLogger: logger), server: index)
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

    /// Moves the pool to `index` unless it is there: a new pool runs, and statements from now on
    /// go to it. The old pool stops once the statements under way on it have ended (or after
    /// `drainLimit`) when its server still answers; at once when it does not, and statements
    /// waiting for one of its connections are asked of the new pool. Then its connections close.
    ///
    /// Whether the old server answers is asked again unless its role was just read: losing the
    /// connection that watched it (a demotion or a pooler ending sessions) does not mean the
    /// server is gone, and the old pool closing a connection under a statement on a live server
    /// cuts that statement off (postgres-nio 1.33 fails it, or at times never answers it).
    private func move(to index: Int, oldServerAnswered: Bool) {
        let moved: Bool = state.withLock { state in
            guard state.pool.server != index else { return false }
            let client = PostgresClient(configuration: servers[index].client, backgroundLogger: logger)
            let old = (pool: state.pool, runner: state.runner)
            state.pool = Pool(client, server: index)
            state.moves += 1
            state.runner = Task { await client.run() }
            let drainLimit = drainLimit
            state.retired.append(
                Task { [self] in
                    let draining = oldServerAnswered ? true : await answers(servers[old.pool.server])
                    let clock = ContinuousClock()
                    let since = clock.now
                    while draining, old.pool.underWay.load(ordering: .relaxed) > 0, clock.now - since < drainLimit, !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                    // The rows of a statement just answered may still be read from its connection.
                    if draining { try? await Task.sleep(for: .milliseconds(500)) }
                    old.runner?.cancel()
                    await old.runner?.value
                })
            return true
        }
        guard moved else { return }
        logger.notice("database pool moved", metadata: ["server": "\(servers[index].name)", "target": "\(target.rawValue)"])
    }

    /// Whether `server` accepts a connection and tells its role within `checkTimeout`.
    private func answers(_ server: DatabaseServer) async -> Bool {
        guard let connection = await connect(to: server) else { return false }
        defer { Task { try? await connection.close() } }
        return await role(over: connection) != nil
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
