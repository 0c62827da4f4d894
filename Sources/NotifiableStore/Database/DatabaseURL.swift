import Foundation
import NIOSSL
import PostgresNIO

/// Reads `DATABASE_URL` (`postgres://user:password@host:port/database?sslmode=…`) into a
/// PostgresNIO client configuration. `sslmode` follows libpq: `disable`, `prefer` (the
/// default), `require` (encrypt, do not verify) and `verify-full`. A `host=/dir` query
/// parameter connects through the Unix socket in that directory, as libpq does.
public enum DatabaseURL {
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Where the URL points, for messages: `host:port/database` (or the socket directory), never
    /// the user's password.
    public static func redacted(_ text: String) -> String {
        guard let parts = try? Parts(text) else { return "(a DATABASE_URL that does not parse)" }
        if let socketPath = parts.socketPath { return "\(socketPath)/\(parts.database ?? "")" }
        return "\(parts.host):\(parts.port)/\(parts.database ?? "")"
    }

    /// The pool's configuration.
    public static func configuration(from text: String) throws -> PostgresClient.Configuration {
        let parts = try Parts(text)
        if let socketPath = parts.socketPath {
            return .init(unixSocketPath: socketPath, username: parts.username, password: parts.password, database: parts.database)
        }
        let tls: PostgresClient.Configuration.TLS
        switch parts.tls {
        case .disable: tls = .disable
        case .prefer(let configuration): tls = .prefer(configuration)
        case .require(let configuration): tls = .require(configuration)
        }
        return .init(host: parts.host, port: parts.port, username: parts.username, password: parts.password, database: parts.database, tls: tls)
    }

    /// The same server for a single connection outside the pool (the availability probe).
    public static func connectionConfiguration(from text: String) throws -> PostgresConnection.Configuration {
        let parts = try Parts(text)
        if let socketPath = parts.socketPath {
            return .init(unixSocketPath: socketPath, username: parts.username, password: parts.password, database: parts.database)
        }
        let tls: PostgresConnection.Configuration.TLS
        switch parts.tls {
        case .disable: tls = .disable
        case .prefer(let configuration): tls = .prefer(try NIOSSLContext(configuration: configuration))
        case .require(let configuration): tls = .require(try NIOSSLContext(configuration: configuration))
        }
        return .init(host: parts.host, port: parts.port, username: parts.username, password: parts.password, database: parts.database, tls: tls)
    }

    private enum TLSMode {
        case disable
        case prefer(TLSConfiguration)
        case require(TLSConfiguration)
    }

    private struct Parts {
        var host = ""
        var port = 5432
        var socketPath: String?
        var username: String
        var password: String?
        var database: String?
        var tls = TLSMode.disable

        init(_ text: String) throws {
            guard let components = URLComponents(string: text),
                let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
            else {
                throw Invalid(description: "DATABASE_URL must look like postgres://user:password@host:5432/database")
            }
            let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
            port = components.port ?? 5432
            guard let username = (components.percentEncodedUser?.removingPercentEncoding).flatMap({ $0.isEmpty ? nil : $0 }) ?? query["user"] else {
                throw Invalid(description: "DATABASE_URL names no user (postgres://USER:password@host/database)")
            }
            self.username = username
            password = components.percentEncodedPassword?.removingPercentEncoding ?? query["password"]
            database = String(components.path.drop(while: { $0 == "/" })).removingPercentEncoding

            if let socketDirectory = query["host"], socketDirectory.hasPrefix("/") {
                socketPath = "\(socketDirectory)/.s.PGSQL.\(port)"
                return
            }
            guard let host = components.host, !host.isEmpty else {
                throw Invalid(description: "DATABASE_URL names no host (postgres://user:password@HOST:5432/database)")
            }
            self.host = host
            tls = try Self.tls(query["sslmode"])
        }

        private static func tls(_ mode: String?) throws -> TLSMode {
            var unverified = TLSConfiguration.makeClientConfiguration()
            unverified.certificateVerification = .none
            switch mode ?? "prefer" {
            case "disable": return .disable
            case "allow", "prefer": return .prefer(unverified)
            case "require": return .require(unverified)
            case "verify-ca", "verify-full": return .require(.makeClientConfiguration())
            case let other:
                throw Invalid(description: "DATABASE_URL has sslmode=\(other); use disable, prefer, require or verify-full")
            }
        }
    }
}
