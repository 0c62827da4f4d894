import Foundation
import HTTPTypes
import HummingbirdTesting
import NotifiableCore
import NotifiableTesting
import Testing

/// NOTIFIABLE_WEB_ORIGINS: a web app's pages call the device API from the browser. The preflight
/// is answered without credentials; answers to a listed origin name it; other origins get nothing
/// that would let a browser read the answer.
@Suite struct BrowserOriginsTests {
    static let origin = "https://app.example.com"

    @Test func aListedOriginsPreflightAndSignedRequestsAreAllowed() async throws {
        try await withTestService(configure: { $0.webOrigins = [Self.origin] }) { client, service in
            let app = try await service.createApp()
            let preflight = try await client.execute(
                uri: "/api/v1/device_tokens", method: .options,
                headers: [.origin: Self.origin, .accessControlRequestMethod: "POST", .accessControlRequestHeaders: "authorization, x-date"],
                body: nil)
            #expect(preflight.status == .noContent)
            #expect(preflight.headers[.accessControlAllowOrigin] == Self.origin)
            #expect(preflight.headers[.accessControlAllowHeaders]?.contains("X-Date") == true)
            #expect(preflight.headers[.accessControlAllowHeaders]?.contains("X-Notifiable-User-Token") == true)
            #expect(preflight.headers[.accessControlAllowCredentials] == nil)

            let uri = "/api/v1/device_tokens?user_alias=alice"
            var headers = signedHeaders(method: .get, path: uri, body: "", credential: app.deviceCredential)
            headers[.origin] = Self.origin
            let answer = try await client.execute(uri: uri, method: .get, headers: headers, body: nil)
            #expect(answer.status == .ok)
            #expect(answer.headers[.accessControlAllowOrigin] == Self.origin)
            #expect(answer.headers[.accessControlExposeHeaders] == "Retry-After")
            // An error answer is readable by the page too, so it can say what went wrong.
            let refused = try await client.execute(uri: uri, method: .get, headers: [.origin: Self.origin], body: nil)
            #expect(refused.status == .unauthorized)
            #expect(refused.headers[.accessControlAllowOrigin] == Self.origin)
        }
    }

    @Test func anotherOriginAndTheConsoleGetNoAllowance() async throws {
        try await withTestService(configure: { $0.webOrigins = [Self.origin] }) { client, _ in
            let elsewhere = try await client.execute(
                uri: "/api/v1/device_tokens", method: .options,
                headers: [.origin: "https://evil.example.com", .accessControlRequestMethod: "POST"], body: nil)
            #expect(elsewhere.headers[.accessControlAllowOrigin] == nil)
            let console = try await client.execute(
                uri: "/dashboard", method: .get, headers: [.origin: Self.origin], body: nil)
            #expect(console.headers[.accessControlAllowOrigin] == nil)
        }
    }
}
