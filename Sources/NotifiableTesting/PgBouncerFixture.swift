import Foundation
import Logging
import NotifiableStore
import PostgresNIO

/// A real PgBouncer (Debian's `pgbouncer`, installed by scripts/test) in front of the test
/// PostgreSQL, in transaction pooling with a server pool of `serverConnections` per database: two
/// transactions of one client in a row then often run on different server connections, as they do
/// in production under load, so anything that needs its session to last shows up.
public struct PgBouncerFixture: Sendable {
    public let port: Int
    /// Its log, for failure messages.
    public let logFile: URL

    /// `url` (a test database's) with PgBouncer's port instead of PostgreSQL's.
    public func url(through url: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.port = port
        return components.string ?? url
    }

    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Runs `body` with a PgBouncer leading to the test PostgreSQL (every database of it), then stops it.
    public static func with<T: Sendable>(
        serverConnections: Int = 2, _ body: @Sendable (PgBouncerFixture) async throws -> T
    ) async throws -> T {
        guard let server = URLComponents(string: try TestDatabase.url()), let serverPort = server.port else {
            throw TestDatabase.NotConfigured()
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pgbouncer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // PgBouncer refuses to run as root; it then runs as postgres, which must write here.
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory.path)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = freeLoopbackPort()
        let user = server.user ?? "notifiable"
        try "\"\(user)\" \"\"\n".write(to: directory.appendingPathComponent("userlist.txt"), atomically: true, encoding: .utf8)
        let configuration = """
            [databases]
            * = host=\(server.host ?? "127.0.0.1") port=\(serverPort)

            [pgbouncer]
            listen_addr = 127.0.0.1
            listen_port = \(port)
            unix_socket_dir =
            auth_type = trust
            auth_file = \(directory.path)/userlist.txt
            pool_mode = transaction
            default_pool_size = \(serverConnections)
            max_client_conn = 1000
            server_login_retry = 1
            logfile = \(directory.path)/pgbouncer.log
            pidfile = \(directory.path)/pgbouncer.pid
            """
        let ini = directory.appendingPathComponent("pgbouncer.ini")
        try configuration.write(to: ini, atomically: true, encoding: .utf8)
        for file in ["userlist.txt", "pgbouncer.ini"] {
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: directory.appendingPathComponent(file).path)
        }

        let process = Process()
        if getuid() == 0 {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", "postgres", "--", "/usr/sbin/pgbouncer", ini.path]
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/pgbouncer")
            process.arguments = [ini.path]
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let fixture = PgBouncerFixture(port: port, logFile: directory.appendingPathComponent("pgbouncer.log"))
        do {
            try await fixture.waitUntilAnswering(databaseURL: fixture.url(through: try TestDatabase.url()))
            let result = try await body(fixture)
            await Self.stop(process)
            return result
        } catch {
            await Self.stop(process)
            throw error
        }
    }

    private func waitUntilAnswering(databaseURL: String) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                let configuration = try DatabaseURL.configuration(from: databaseURL)
                try await withPostgresClient(configuration, logger: TestDatabase.logger) { client in
                    _ = try await client.query("SELECT 1", logger: TestDatabase.logger)
                }
                return
            } catch {
                if ContinuousClock.now > deadline { throw PgBouncerDidNotStart(log: log) }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// SIGTERM (runuser passes it on), then waits on a thread of its own.
    private static func stop(_ process: Process) async {
        process.terminate()
        await withCheckedContinuation { continuation in
            Thread {
                process.waitUntilExit()
                continuation.resume()
            }.start()
        }
    }

    public struct PgBouncerDidNotStart: Error, CustomStringConvertible {
        public let log: String
        public var description: String { "PgBouncer did not answer within 60 s; its log:\n\(log)" }
    }
}
