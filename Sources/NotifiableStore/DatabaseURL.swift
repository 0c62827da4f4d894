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

    public static func configuration(from text: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: text),
              let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
        else {
            throw Invalid(description: "DATABASE_URL must look like postgres://user:password@host:5432/database")
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let port = components.port ?? 5432
        guard let username = (components.percentEncodedUser?.removingPercentEncoding).flatMap({ $0.isEmpty ? nil : $0 }) ?? query["user"] else {
            throw Invalid(description: "DATABASE_URL names no user (postgres://USER:password@host/database)")
        }
        let password = components.percentEncodedPassword?.removingPercentEncoding ?? query["password"]
        let database = String(components.path.drop(while: { $0 == "/" })).removingPercentEncoding

        if let socketDirectory = query["host"], socketDirectory.hasPrefix("/") {
            return .init(
                unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: username, password: password,
                database: database
            )
        }
        guard let host = components.host, !host.isEmpty else {
            throw Invalid(description: "DATABASE_URL names no host (postgres://user:password@HOST:5432/database)")
        }
        return .init(host: host, port: port, username: username, password: password, database: database, tls: try tls(query["sslmode"]))
    }

    private static func tls(_ mode: String?) throws -> PostgresClient.Configuration.TLS {
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
