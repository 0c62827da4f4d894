import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

@testable import NotifiableApp

/// The dashboard's and the admin API's defences: sessions that sign-out ends for good, cookies
/// marked Secure behind HTTPS, guesses of the admin token slowed to a stop, and headers that stop
/// sniffing and referrers on every answer.
@Suite struct DashboardSecurityTests {
    static func cookie(of response: TestResponse) throws -> String {
        try #require(response.headers[.setCookie]?.split(separator: ";").first.map(String.init))
    }

    @Test func signingOutEndsTheSessionForEveryCopyOfTheCookie() async throws {
        try await withTestService { client, service in
            let signedIn = try await DashboardTests.login(client, token: service.configuration.adminToken ?? "")
            let cookie = try Self.cookie(of: signedIn)
            #expect(try await client.execute(uri: "/dashboard", method: .get, headers: [.cookie: cookie]).status == .ok)
            // Another session stays signed in when this one signs out.
            let other = try Self.cookie(of: try await DashboardTests.login(client, token: service.configuration.adminToken ?? ""))
            #expect(other != cookie)

            let out = try await client.execute(uri: "/dashboard/logout", method: .post, headers: [.cookie: cookie])
            #expect(out.status == .seeOther)
            // The old cookie, replayed as a copy would be: sent to sign in again.
            let replayed = try await client.execute(uri: "/dashboard", method: .get, headers: [.cookie: cookie])
            #expect(replayed.status == .seeOther)
            #expect(replayed.headers[.location] == "/dashboard/login")
            #expect(try await client.execute(uri: "/dashboard", method: .get, headers: [.cookie: other]).status == .ok)
            // Only a keyed digest of the token is stored, and it is the one signing out ended.
            let value = String(cookie.split(separator: "=", maxSplits: 1)[1])
            let session = DashboardSession(
                adminToken: service.configuration.adminToken ?? "", sessions: DashboardSessionStore(client: service.postgres, logger: TestDatabase.logger)
            )
            #expect(
                try await service.integer(
                    "SELECT count(*) FROM dashboard_sessions WHERE token_digest = \(session.digest(value)) AND ended_at IS NOT NULL"
                ) == 1)
            // Forged and malformed cookies get nowhere.
            for forged in ["notifiable_session=\(String(repeating: "A", count: 43))", "notifiable_session=1.deadbeef", "notifiable_session="] {
                #expect(try await client.execute(uri: "/dashboard", method: .get, headers: [.cookie: forged]).status == .seeOther)
            }
        }
    }

    /// A leaked admin token is replaced: every session signed in with the old one ends with it.
    @Test func changingTheAdminTokenEndsEverySession() async throws {
        let cookie = try await withTestService { client, service in
            let cookie = try Self.cookie(of: try await DashboardTests.login(client, token: service.configuration.adminToken ?? ""))
            #expect(try await client.execute(uri: "/dashboard", method: .get, headers: [.cookie: cookie]).status == .ok)
            return cookie
        }
        // The same database, served again after the token was changed.
        try await withTestService(configure: { $0.adminToken = "replaced-\(UUID().uuidString)" }) { client, _ in
            let replayed = try await client.execute(uri: "/dashboard", method: .get, headers: [.cookie: cookie])
            #expect(replayed.status == .seeOther)
            #expect(replayed.headers[.location] == "/dashboard/login")
        }
    }

    @Test func theCookieIsSecureWhenATrustedProxySaysTheClientCameOverHTTPS() async throws {
        try await withTestService(.live, configure: { $0.trustedProxies = ["127.0.0.1"] }) { client, service in
            let token = service.configuration.adminToken ?? ""
            func login(_ extra: HTTPFields) async throws -> TestResponse {
                var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
                headers.append(contentsOf: extra)
                return try await client.execute(uri: "/dashboard/login", method: .post, headers: headers, body: ByteBuffer(string: "token=\(token)"))
            }
            let https = try await login([HTTPField.Name("X-Forwarded-Proto")!: "https"])
            #expect(https.headers[.setCookie]?.contains("Secure") == true, "\(https.headers)")
            let http = try await login([HTTPField.Name("X-Forwarded-Proto")!: "http"])
            #expect(http.headers[.setCookie]?.contains("Secure") == false)
        }
        // An untrusted peer's X-Forwarded-Proto is ignored.
        try await withTestService(.live) { client, service in
            let answer = try await client.execute(
                uri: "/dashboard/login", method: .post,
                headers: [.contentType: "application/x-www-form-urlencoded", HTTPField.Name("X-Forwarded-Proto")!: "https"],
                body: ByteBuffer(string: "token=\(service.configuration.adminToken ?? "")")
            )
            #expect(answer.status == .seeOther)
            #expect(answer.headers[.setCookie]?.contains("Secure") == false)
        }
    }

    @Test func guessingTheAdminTokenIsRefusedWith429AndLogged() async throws {
        let capture = LogCapture()
        try await withTestService(.live, logger: capture.logger(level: .info)) { client, service in
            let token = service.configuration.adminToken ?? ""
            var statuses: [HTTPResponse.Status] = []
            for guess in 0..<12 {
                statuses.append(try await client.execute(uri: "/admin/apps", method: .get, headers: [.authorization: "Bearer guess-\(guess)"]).status)
            }
            #expect(statuses.prefix(10).allSatisfy { $0 == .unauthorized }, "\(statuses)")
            #expect(statuses.suffix(2).allSatisfy { $0 == .tooManyRequests }, "\(statuses)")
            // Even the right token waits now, and the answer says how long.
            let right = try await client.execute(uri: "/admin/apps", method: .get, headers: [.authorization: "Bearer \(token)"])
            #expect(right.status == .tooManyRequests)
            #expect(right.errorCode == "too_many_failed_attempts")
            let wait = try #require(right.headers[.retryAfter].flatMap(Int.init))
            #expect(wait >= 1 && wait <= 60)
            // The dashboard's sign-in counts against the same client.
            let form = try await client.execute(
                uri: "/dashboard/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: "token=\(token)")
            )
            #expect(form.status == .tooManyRequests)
            #expect(form.headers[.retryAfter] != nil)
        }
        #expect(capture.text.contains("repeated failed sign-ins"), "\(capture.text.suffix(2000))")
    }

    @Test func everyAnswerForbidsSniffingAndReferrers() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let answers = [
                try await client.execute(uri: "/health/live", method: .get),
                try await client.execute(uri: "/no/such/route", method: .get),
                try await client.execute(uri: "/dashboard/login", method: .get),
                try await client.execute(uri: "/admin/apps", method: .get),
                try await client.signed(.post, "/api/v1/device_tokens", body: "{", as: app.deviceCredential),
                try await client.signed(.get, "/api/v1/device_tokens?user_alias=x", as: app.deviceCredential),
            ]
            for answer in answers {
                #expect(answer.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff", "\(answer.status)")
                #expect(answer.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer", "\(answer.status)")
            }
        }
    }
}
