import Foundation
import NIOSSL
import PostgresNIO

/// Reads `DATABASE_URL` (`postgres://user:password@host:port/database?sslmode=…`) into PostgresNIO
/// configurations. `sslmode` follows libpq: `disable`, `prefer` (the default), `require` (encrypt,
/// do not verify) and `verify-full`. A `host=/dir` query parameter connects through the Unix
/// socket in that directory, as libpq does.
///
/// Several hosts, as libpq takes them (`postgres://u@db1:5432,db2:5432/notifiable`), are tried in
/// order for the first whose role suits `target_session_attrs` (`any`, the default, `read-write`,
/// `primary`, `read-only`, `standby`, `prefer-standby`); `Database` keeps looking as roles change.
public enum DatabaseURL {
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Where the URL points, for messages: `host:port,…/database` (or the socket directory),
    /// never the user's password.
    public static func redacted(_ text: String) -> String {
        guard let texts = try? singleHostTexts(text), let all = try? texts.map(Parts.init), let first = all.first else {
            return "(a DATABASE_URL that does not parse)"
        }
        if let socketPath = first.socketPath { return "\(socketPath)/\(first.database ?? "")" }
        return all.map { "\($0.host):\($0.port)" }.joined(separator: ",") + "/\(first.database ?? "")"
    }

    /// Every server the URL names, in its order, and the role the service wants of them.
    public static func servers(from text: String) throws -> (servers: [DatabaseServer], target: TargetSessionAttributes) {
        let texts = try singleHostTexts(text)
        let servers = try texts.map { text in
            let parts = try Parts(text)
            return DatabaseServer(
                name: parts.socketPath ?? (parts.host.contains(":") ? "[\(parts.host)]:\(parts.port)" : "\(parts.host):\(parts.port)"),
                client: try clientConfiguration(parts),
                connection: try connectionConfiguration(parts))
        }
        let attributes = try Parts(texts[0]).targetSessionAttributes
        return (servers, attributes)
    }

    /// The first server's pool configuration: for a URL of one host, its pool.
    public static func configuration(from text: String) throws -> PostgresClient.Configuration {
        try clientConfiguration(Parts(try singleHostTexts(text)[0]))
    }

    private static func clientConfiguration(_ parts: Parts) throws -> PostgresClient.Configuration {
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

    /// The first server for a single connection outside the pool.
    public static func connectionConfiguration(from text: String) throws -> PostgresConnection.Configuration {
        try connectionConfiguration(Parts(try singleHostTexts(text)[0]))
    }

    private static func connectionConfiguration(_ parts: Parts) throws -> PostgresConnection.Configuration {
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

    /// The URL once per host of its host list, each naming that host alone: `postgres://u@a:1,b:2/d`
    /// gives `postgres://u@a:1/d` and `postgres://u@b:2/d`.
    static func singleHostTexts(_ text: String) throws -> [String] {
        guard let schemeEnd = text.range(of: "://") else { return [text] }
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let hostsStart = authority.lastIndex(of: "@").map { authority.index(after: $0) } ?? authority.startIndex
        let hostList = authority[hostsStart...]
        guard hostList.contains(",") else { return [text] }
        let hosts = hostList.split(separator: ",", omittingEmptySubsequences: false)
        guard hosts.allSatisfy({ !$0.isEmpty }) else {
            throw Invalid(description: "DATABASE_URL has an empty host in its host list (postgres://user@HOST1:5432,HOST2:5432/database)")
        }
        let head = text[..<hostsStart], tail = text[authorityEnd...]
        return hosts.map { "\(head)\($0)\(tail)" }
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
        var targetSessionAttributes = TargetSessionAttributes.any

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
            if let attributes = query["target_session_attrs"] {
                guard let known = TargetSessionAttributes(rawValue: attributes) else {
                    let allowed = TargetSessionAttributes.allCases.map(\.rawValue).joined(separator: ", ")
                    throw Invalid(description: "DATABASE_URL has target_session_attrs=\(attributes); use one of \(allowed)")
                }
                targetSessionAttributes = known
            }

            if let socketDirectory = query["host"], socketDirectory.hasPrefix("/") {
                socketPath = "\(socketDirectory)/.s.PGSQL.\(port)"
                return
            }
            guard let host = components.host, !host.isEmpty else {
                throw Invalid(description: "DATABASE_URL names no host (postgres://user:password@HOST:5432/database)")
            }
            // An IPv6 literal comes back in its brackets, which a connection's host must not carry.
            self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
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
