import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

@testable import NotifiableApp

/// A browser's session in the console, for tests: signed in, it reads pages and sends forms with
/// the session's CSRF token, as the pages' own forms do.
struct ConsoleSession {
    let client: any TestClientProtocol
    let cookie: String
    let csrf: String

    /// Signs in `name` (nil: the admin token) with `password`.
    static func signIn(_ client: some TestClientProtocol, _ service: TestService, name: String?, password: String) async throws -> ConsoleSession {
        var fields = ["password": password]
        if let name { fields["name"] = name }
        let answer = try await client.execute(
            uri: "/dashboard/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"], body: ByteBuffer(string: encode(fields)))
        #expect(answer.status == .seeOther, "sign-in of \(name ?? "the admin token")")
        let cookie = try #require(answer.headers[.setCookie]?.split(separator: ";").first.map(String.init))
        let session = DashboardSession(
            adminToken: service.configuration.adminToken ?? "", sessions: DashboardSessionStore(client: service.postgres, logger: TestDatabase.logger))
        return ConsoleSession(client: client, cookie: cookie, csrf: session.csrfToken(session: String(cookie.split(separator: "=", maxSplits: 1)[1])))
    }

    /// The sign-in form sent with `fields`, sent again as a person would while the answer is 503
    /// with Retry-After: a sign-in whose password check did not finish by the request deadline (a
    /// full-cost check for an unknown or disabled name, on a starved machine) is answered so.
    static func attemptSignIn(_ client: some TestClientProtocol, _ fields: [String: String]) async throws -> TestResponse {
        var tries = 1
        while true {
            let answer = try await client.execute(
                uri: "/dashboard/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: encode(fields)))
            guard answer.status == .serviceUnavailable, tries < 5, let wait = answer.headers[.retryAfter].flatMap(Int.init) else { return answer }
            tries += 1
            try await Task.sleep(for: .seconds(wait))
        }
    }

    static func admin(_ client: some TestClientProtocol, _ service: TestService) async throws -> ConsoleSession {
        try await signIn(client, service, name: nil, password: service.configuration.adminToken ?? "")
    }

    func get(_ uri: String) async throws -> TestResponse {
        try await client.execute(uri: uri, method: .get, headers: [.cookie: cookie])
    }

    func page(_ uri: String) async throws -> String {
        String(buffer: try await get(uri).body)
    }

    /// A form sent with this session's CSRF token.
    func post(_ uri: String, _ fields: [String: String] = [:]) async throws -> TestResponse {
        var fields = fields
        fields["csrf"] = fields["csrf"] ?? csrf
        return try await client.execute(
            uri: uri, method: .post, headers: [.cookie: cookie, .contentType: "application/x-www-form-urlencoded"],
            body: ByteBuffer(string: Self.encode(fields)))
    }

    static func encode(_ fields: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
            .joined(separator: "&")
    }

    /// A new operator with a unique name; hashed with light scrypt parameters (the hash names
    /// them) so that tests sign in quickly.
    static func addOperator(_ service: TestService, _ role: OperatorRole, apps: [Int64] = []) async throws -> (name: String, password: String) {
        let name = "\(role.rawValue)-\(UUID().uuidString.prefix(8).lowercased())"
        let password = "correct horse \(UUID().uuidString)"
        _ = try await OperatorStore(client: service.postgres, logger: TestDatabase.logger).add(
            name: name, role: role, password: try PasswordHash.make(password, parameters: .init(rounds: 1 << 10, blockSize: 8, parallelism: 1)),
            appIDs: apps)
        return (name, password)
    }
}
