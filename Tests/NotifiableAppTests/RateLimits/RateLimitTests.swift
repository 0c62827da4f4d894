import Foundation
import HTTPTypes
import HummingbirdTesting
import NotifiableApp
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// Registrations, sends and status events over their limits are answered 429 with Retry-After
/// and the JSON error; each credential and each app keeps its own allowance; refusals are counted.
@Suite struct RateLimitTests {
    static func limited(_ configure: @escaping (inout RateLimits) -> Void) -> (inout ServerConfiguration) -> Void {
        { configuration in
            configuration.rateLimits = RateLimits(perCredential: [:], perApp: [:])
            configure(&configuration.rateLimits)
        }
    }

    @Test func registrationsOverACredentialsLimitGet429WithRetryAfterAndOtherCredentialsDoNot() async throws {
        let configure = Self.limited { $0.perCredential[.registrations] = RateLimit(count: 3, periodSeconds: 60) }
        try await withTestService(isolatedDatabase: true, configure: configure) { client, service in
            let app = try await service.createApp()
            for n in 0..<3 { _ = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x7A0 + n)) }
            let body = #"{"device_token": {"provider": "apns", "token": "\#(Pipeline.token(0x7A9))"}}"#
            let refused = try await client.signed(.post, "/api/v1/device_tokens", body: body, as: app.deviceCredential)
            #expect(refused.status == .tooManyRequests)
            #expect(refused.errorCode == "rate_limited")
            let retryAfter = try #require(refused.headers[.retryAfter].flatMap(Int.init))
            #expect((1...20).contains(retryAfter))  // 3 a minute: one more in 20 s at most
            // Not a device was written for it; the other forms of registration share the allowance.
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app.app.id)") == 3)
            #expect(try await client.signed(.post, "/api/v1/device_tokens.json", body: body, as: app.deviceCredential).status == .tooManyRequests)
            let first = try #require(try await service.integer("SELECT min(id) FROM devices WHERE app_id = \(app.app.id)"))
            for method in [HTTPRequest.Method.patch, .put] {
                let update = try await client.signed(method, "/api/v1/device_tokens/\(first)", body: #"{"name": "Renamed"}"#, as: app.deviceCredential)
                #expect(update.status == .tooManyRequests)
            }
            let tags = try await client.signed(.put, "/api/v1/device_tokens/\(first)/tags", body: #"{"tags": ["a"]}"#, as: app.deviceCredential)
            #expect(tags.status == .tooManyRequests)
            // The server credential has its own allowance; reads are not limited.
            #expect(try await client.signed(.post, "/api/v1/device_tokens", body: body, as: app.serverCredential).status == .ok)
            #expect(try await client.signed(.get, "/api/v1/device_tokens?user_alias=x", as: app.deviceCredential).status == .ok)
            // Another app is untouched.
            let other = try await service.createApp(name: "Other")
            _ = try await Pipeline.register(client, other.deviceCredential, token: Pipeline.token(0x7A0))

            let samples = try await client.scrape()
            #expect(samples.value("notifiable_rate_limited_total", ["action": "registrations", "scope": "credential", "app": "\(app.app.id)"]) == 5)
        }
    }

    @Test func anAppsLimitCountsAllOfItsCredentialsTogether() async throws {
        let configure = Self.limited { $0.perApp[.events] = RateLimit(count: 2, periodSeconds: 3600) }
        try await withTestService(isolatedDatabase: true, configure: configure) { client, service in
            let app = try await service.createApp()
            let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x7B0))
            let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "hi", "device_ids": [\#(device)]}"#)
            let body = #"{"device_token_id": \#(device)}"#
            let path = "/api/v1/notifications/\(id)/delivered"
            // Unknown to the queue yet (404), but each report counts against the limit all the same.
            let first = try await client.signed(.post, path, body: body, as: app.deviceCredential)
            let second = try await client.signed(.post, path, body: body, as: app.serverCredential)
            #expect(first.status != .tooManyRequests && second.status != .tooManyRequests)
            let third = try await client.signed(.post, "/api/v1/notifications/\(id)/opened", body: body, as: app.deviceCredential)
            #expect(third.status == .tooManyRequests)
            #expect(third.json["error"]?["message"]?.stringValue?.contains("for this app") == true)
            // Sends are another action, with no limit here.
            _ = try await Pipeline.send(client, app.serverCredential, #"{"message": "again", "device_ids": [\#(device)]}"#)
        }
    }

    @Test func sendsAreLimitedAndARefusedSendCreatesNothing() async throws {
        let configure = Self.limited { $0.perCredential[.sends] = RateLimit(count: 1, periodSeconds: 3600) }
        try await withTestService(isolatedDatabase: true, configure: configure) { client, service in
            let app = try await service.createApp()
            _ = try await Pipeline.send(client, app.serverCredential, #"{"message": "one", "all": true}"#)
            let refused = try await client.signed(.post, "/api/v1/notifications", body: #"{"message": "two", "all": true}"#, as: app.serverCredential)
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] == "3600")
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 1)
        }
    }

    /// A rich notification's content upload is the second half of its send and counts as one.
    @Test func aContentUploadCountsAsASend() async throws {
        let configure = Self.limited { $0.perCredential[.sends] = RateLimit(count: 1, periodSeconds: 3600) }
        try await withTestService(isolatedDatabase: true, configure: configure) { client, service in
            let app = try await service.createApp()
            let id = try await Pipeline.send(client, app.serverCredential, #"{"title": "Photo", "all": true, "rich": true}"#)
            let refused = try await client.signed(
                .put, "/api/v1/notifications/\(id)/content", bytes: [0x89, 0x50], contentType: "image/png", as: app.serverCredential)
            #expect(refused.status == .tooManyRequests)
            #expect(refused.errorCode == "rate_limited")
            #expect(try await service.integer("SELECT count(*) FROM notification_contents WHERE notification_id = \(id)") == 0)
        }
    }

    /// A user's own changes (`/api/v1/me`, user token) are status events: each user has a
    /// credential's allowance, and all of them count against the app's. Reads are not limited.
    @Test func aUsersChangesAreLimitedPerUserAndPerApp() async throws {
        let configure = Self.limited {
            $0.perCredential[.events] = RateLimit(count: 2, periodSeconds: 3600)
            $0.perApp[.events] = RateLimit(count: 3, periodSeconds: 3600)
        }
        try await withTestService(isolatedDatabase: true, configure: configure) { client, service in
            let app = try await service.createApp()
            let id = try await UserNotificationsTests.sendStateful(client, app.serverCredential, to: ["alice", "bob"], title: "Sale")
            let alice = try await client.userToken(for: "alice", as: app.serverCredential)
            let bob = try await client.userToken(for: "bob", as: app.serverCredential)
            let path = "/api/v1/me/notifications/\(id)"
            #expect(try await client.asUser(alice, .patch, path, body: #"{"read_state": "read"}"#).status == .ok)
            #expect(try await client.asUser(alice, .patch, path, body: #"{"read_state": "unread"}"#).status == .ok)
            let third = try await client.asUser(alice, .patch, path, body: #"{"read_state": "read"}"#)
            #expect(third.status == .tooManyRequests)
            #expect(third.json["error"]?["message"]?.stringValue?.contains("for this user") == true)
            #expect(try await client.asUser(alice, .get, "/api/v1/me/notifications").status == .ok)
            // Bob has his own allowance, but the app's third change is its last.
            #expect(try await client.asUser(bob, .patch, path, body: #"{"read_state": "read"}"#).status == .ok)
            let app4 = try await client.asUser(bob, .delete, path)
            #expect(app4.status == .tooManyRequests)
            #expect(app4.json["error"]?["message"]?.stringValue?.contains("for this app") == true)
            let samples = try await client.scrape()
            #expect(samples.value("notifiable_rate_limited_total", ["action": "events", "scope": "user", "app": "\(app.app.id)"]) == 1)
        }
    }

    @Test func limitsAreReadFromTheEnvironmentAndBadOnesNameTheirVariable() throws {
        var environment = ["DATABASE_URL": try TestDatabase.url(), "NOTIFIABLE_MASTER_KEY": TestDatabase.masterKey.base64]
        environment["NOTIFIABLE_RATE_LIMIT_SENDS"] = "30/min"
        environment["NOTIFIABLE_RATE_LIMIT_EVENTS_PER_APP"] = "off"
        let configuration = try ServerConfiguration.fromEnvironment(environment)
        #expect(configuration.rateLimits.perCredential[.sends] == RateLimit(count: 30, periodSeconds: 60))
        #expect(configuration.rateLimits.perApp[.events] == nil)
        #expect(configuration.rateLimits.perCredential[.registrations] == RateLimits.defaults.perCredential[.registrations])
        environment["NOTIFIABLE_RATE_LIMIT_REGISTRATIONS"] = "lots"
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(environment) }
        do {
            _ = try ServerConfiguration.fromEnvironment(environment)
        } catch {
            #expect(error.variable == "NOTIFIABLE_RATE_LIMIT_REGISTRATIONS")
        }
    }
}
