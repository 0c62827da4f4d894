import Foundation
import HTTPTypes
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// `require_verified_alias`: with it on, device credentials (shipped in every install) take a
/// user alias only with that user's token, so one install cannot hijack another user's pushes.
@Suite struct VerifiedAliasTests {
    static let tokenA = String(repeating: "a1", count: 32)
    static let tokenB = String(repeating: "b2", count: 32)

    static func registration(token: String = tokenA, alias: String?, extra: String = "") -> String {
        let aliasField = alias.map { #", "user_alias": "\#($0)""# } ?? ""
        return #"{"device_token": {"provider": "apns", "token": "\#(token)"\#(aliasField)\#(extra)}}"#
    }

    @Test func registeringAsAliceNeedsHerToken() async throws {
        try await withTestService { client, service in
            let app = try await service.createVerifiedApp(client: client)
            let refused = try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.deviceCredential)
            #expect(refused.status == .forbidden)
            #expect(refused.errorCode == "user_token_required")
            #expect(refused.errorField == "user_token")
            #expect(refused.json["error"]?["message"]?.stringValue?.contains("POST /api/v1/users/{alias}/tokens") == true)
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app.app.id)") == 0)

            let token = try await client.userToken(for: "alice", as: app.serverCredential)
            let registered = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.deviceCredential, userToken: token
            )
            #expect(registered.status == .ok)
            #expect(registered.json["user_alias"]?.stringValue == "alice")

            let garbage = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.deviceCredential, userToken: "not.a.token"
            )
            #expect(garbage.status == .unauthorized)
            #expect(garbage.errorCode == "invalid_user_token")
        }
    }

    @Test func theTokenMayRideInTheBodyAndIsNeverStored() async throws {
        try await withTestService { client, service in
            let app = try await service.createVerifiedApp(client: client)
            let token = try await client.userToken(for: "alice", as: app.serverCredential)
            let inside = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(alias: "alice", extra: #", "user_token": "\#(token)", "app_version": "2.1""#),
                as: app.deviceCredential
            )
            #expect(inside.status == .ok)
            #expect(inside.json["platform_properties"] == .object(["app_version": .string("2.1")]))
            let id = try #require(inside.json["id"]?.intValue)

            let topLevel = #"{"provider": "apns", "token": "\#(Self.tokenB)", "user_alias": "alice", "user_token": "\#(token)"}"#
            let beside = try await client.signed(.post, "/api/v1/device_tokens", body: topLevel, as: app.deviceCredential)
            #expect(beside.status == .ok)
            #expect(beside.json["platform_properties"] == .object([:]))
            // Beside the device_token envelope, as a client adding it to the SDK's body would put it.
            let envelope = #"{"user_token": "\#(token)", "device_token": {"provider": "apns", "token": "\#(Self.tokenA)", "user_alias": "alice"}}"#
            let again = try await client.signed(.post, "/api/v1/device_tokens", body: envelope, as: app.deviceCredential)
            #expect(again.status == .ok)
            #expect(again.json["id"]?.intValue == id)
            let stored = try await service.integer(
                "SELECT count(*) FROM devices WHERE app_id = \(app.app.id) AND (platform_properties ? 'user_token' OR custom_properties ? 'user_token')"
            )
            #expect(stored == 0)

            let wrongType = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(alias: "alice", extra: #", "user_token": 42"#), as: app.deviceCredential
            )
            #expect(wrongType.status == .unprocessableContent)
            #expect(wrongType.errorField == "device_token.user_token")
        }
    }

    @Test func anotherUsersOrAnotherAppsTokenIsAMismatch() async throws {
        try await withTestService { client, service in
            let app = try await service.createVerifiedApp(client: client), other = try await service.createApp()
            let bobs = try await client.userToken(for: "bob", as: app.serverCredential)
            let asAlice = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.deviceCredential, userToken: bobs
            )
            #expect(asAlice.status == .forbidden)
            #expect(asAlice.errorCode == "user_token_mismatch")
            let foreign = try await client.userToken(for: "alice", as: other.serverCredential)
            let fromOtherApp = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.deviceCredential, userToken: foreign
            )
            #expect(fromOtherApp.status == .forbidden)
            #expect(fromOtherApp.errorCode == "user_token_mismatch")
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app.app.id)") == 0)

            // Signed with the app's real key but past its expiry.
            let past = Date() - 7200
            let expired = UserToken(appID: app.app.id, userAlias: "alice", generation: 1, issuedAt: past, expiresAt: past + 60)
                .signed(with: service.configuration.keys.current.userTokenKey(appID: app.app.id, generation: 1))
            let late = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.deviceCredential, userToken: expired
            )
            #expect(late.status == .unauthorized)
            #expect(late.errorCode == "invalid_user_token")
            #expect(late.json["error"]?["message"]?.stringValue?.contains("expired") == true)
        }
    }

    @Test func movingADeviceToAnotherAliasNeedsTheNewAliassToken() async throws {
        try await withTestService { client, service in
            let app = try await service.createVerifiedApp(client: client)
            let alices = try await client.userToken(for: "alice", as: app.serverCredential)
            let bobs = try await client.userToken(for: "bob", as: app.serverCredential)
            let registered = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.deviceCredential, userToken: alices
            )
            let id = try #require(registered.json["id"]?.intValue)
            for method in [HTTPRequest.Method.patch, .put] {
                let bare = try await client.signed(method, "/api/v1/device_tokens/\(id)", body: #"{"user_alias": "bob"}"#, as: app.deviceCredential)
                #expect(bare.status == .forbidden && bare.errorCode == "user_token_required", "\(method)")
                let withAlices = try await client.signed(
                    method, "/api/v1/device_tokens/\(id)", body: #"{"user_alias": "bob"}"#, as: app.deviceCredential, userToken: alices
                )
                #expect(withAlices.status == .forbidden && withAlices.errorCode == "user_token_mismatch", "\(method)")
            }
            let moved = try await client.signed(
                .put, "/api/v1/device_tokens/\(id)", body: #"{"user_alias": "bob"}"#, as: app.deviceCredential, userToken: bobs
            )
            #expect(moved.status == .ok)
            #expect(moved.json["user_alias"]?.stringValue == "bob")
            // Re-registering the same push token for alice takes her token, too.
            let back = try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.deviceCredential)
            #expect(back.status == .forbidden)
            // Changes that hand the device to nobody new need nothing, even when they repeat its alias (as the SDKs' updates do).
            let renamed = try await client.signed(
                .patch, "/api/v1/device_tokens/\(id)", body: #"{"name": "Bob's phone", "language": "fr", "user_alias": "bob"}"#, as: app.deviceCredential
            )
            #expect(renamed.status == .ok)
            #expect(renamed.json["user_alias"]?.stringValue == "bob")
        }
    }

    @Test func swappingThePushTokenOfAUsersDeviceNeedsTheUsersToken() async throws {
        try await withTestService { client, service in
            let app = try await service.createVerifiedApp(client: client)
            let alices = try await client.userToken(for: "alice", as: app.serverCredential)
            let registered = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.deviceCredential, userToken: alices
            )
            let id = try #require(registered.json["id"]?.intValue)
            // Otherwise any install could point alice's device at its own push token.
            let swapped = try await client.signed(.patch, "/api/v1/device_tokens/\(id)", body: #"{"token": "\#(Self.tokenB)"}"#, as: app.deviceCredential)
            #expect(swapped.status == .forbidden && swapped.errorCode == "user_token_required")
            let sameToken = try await client.signed(
                .patch, "/api/v1/device_tokens/\(id)", body: #"{"token": "\#(Self.tokenA.uppercased())", "name": "x"}"#, as: app.deviceCredential
            )
            #expect(sameToken.status == .ok)
            let proven = try await client.signed(
                .patch, "/api/v1/device_tokens/\(id)", body: #"{"token": "\#(Self.tokenB)"}"#, as: app.deviceCredential, userToken: alices
            )
            #expect(proven.status == .ok)
            #expect(proven.json["token"]?.stringValue == Self.tokenB)
        }
    }

    @Test func anonymisingNeedsNoToken() async throws {
        try await withTestService { client, service in
            let app = try await service.createVerifiedApp(client: client)
            let alices = try await client.userToken(for: "alice", as: app.serverCredential)
            let registered = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.deviceCredential, userToken: alices
            )
            let id = try #require(registered.json["id"]?.intValue)
            let cleared = try await client.signed(.patch, "/api/v1/device_tokens/\(id)", body: #"{"user_alias": ""}"#, as: app.deviceCredential)
            #expect(cleared.status == .ok)
            #expect(cleared.json["user_alias"] == .null)
            let anonymous = try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(alias: nil), as: app.deviceCredential)
            #expect(anonymous.status == .ok)
            #expect(anonymous.json["id"]?.intValue == id)
            let nulled = try await client.signed(
                .put, "/api/v1/device_tokens/\(id)", body: #"{"user_alias": null, "token": "\#(Self.tokenB)"}"#, as: app.deviceCredential)
            #expect(nulled.status == .ok)
            #expect(try await client.signed(.delete, "/api/v1/device_tokens/\(id)", as: app.deviceCredential).status == .noContent)
        }
    }

    @Test func listingAUsersDevicesNeedsTheUsersToken() async throws {
        try await withTestService { client, service in
            let app = try await service.createVerifiedApp(client: client)
            let alices = try await client.userToken(for: "alice", as: app.serverCredential)
            let bobs = try await client.userToken(for: "bob", as: app.serverCredential)
            try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.deviceCredential, userToken: alices)
            for path in ["/api/v1/device_tokens?user_alias=alice", "/api/v1/device_tokens.json?user%5Balias%5D=alice"] {
                let bare = try await client.signed(.get, path, as: app.deviceCredential)
                #expect(bare.status == .forbidden && bare.errorCode == "user_token_required", "\(path)")
                let wrong = try await client.signed(.get, path, as: app.deviceCredential, userToken: bobs)
                #expect(wrong.status == .forbidden && wrong.errorCode == "user_token_mismatch", "\(path)")
                let listed = try await client.signed(.get, path, as: app.deviceCredential, userToken: alices)
                #expect(listed.status == .ok)
                #expect(listed.json.arrayValue?.count == 1, "\(path)")
            }
        }
    }

    @Test func serverCredentialsNeedNoToken() async throws {
        try await withTestService { client, service in
            let app = try await service.createVerifiedApp(client: client)
            let registered = try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.serverCredential)
            #expect(registered.status == .ok)
            let id = try #require(registered.json["id"]?.intValue)
            #expect(try await client.signed(.patch, "/api/v1/device_tokens/\(id)", body: #"{"user_alias": "bob"}"#, as: app.serverCredential).status == .ok)
            let listed = try await client.signed(.get, "/api/v1/device_tokens?user_alias=bob", as: app.serverCredential)
            #expect(listed.status == .ok)
            #expect(listed.json.arrayValue?.count == 1)
        }
    }

    @Test func withTheFlagOffNoTokenIsNeeded() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let shown = try await client.admin(.get, "/admin/apps/\(app.app.id)", service: service)
            #expect(shown.json["require_verified_alias"] == .bool(false))
            let registered = try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(alias: "alice"), as: app.deviceCredential)
            #expect(registered.status == .ok)
            let id = try #require(registered.json["id"]?.intValue)
            #expect(
                try await client.signed(
                    .patch, "/api/v1/device_tokens/\(id)", body: #"{"user_alias": "bob", "token": "\#(Self.tokenB)"}"#, as: app.deviceCredential
                ).status == .ok)
            #expect(try await client.signed(.get, "/api/v1/device_tokens?user_alias=bob", as: app.deviceCredential).json.arrayValue?.count == 1)
            // A user_token sent anyway is not stored, and an invalid one is not even read.
            let extra = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(alias: "carol", extra: #", "user_token": 42"#), as: app.deviceCredential
            )
            #expect(extra.status == .ok)
            #expect(extra.json["platform_properties"] == .object([:]))

            // Switched on and off again: back to no token.
            let verified = try await client.admin(.patch, "/admin/apps/\(app.app.id)", body: #"{"require_verified_alias": true}"#, service: service)
            #expect(verified.json["require_verified_alias"] == .bool(true))
            #expect(
                try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(alias: "dave"), as: app.deviceCredential).status == .forbidden)
            try await client.admin(.patch, "/admin/apps/\(app.app.id)", body: #"{"require_verified_alias": false}"#, service: service)
            #expect(try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(alias: "dave"), as: app.deviceCredential).status == .ok)
        }
    }

    /// A device may not tag itself into a user's audience (`user:`, `username:` in any case) where
    /// the app requires verified aliases; the backend may, and other tags stay the device's own.
    @Test func onlyTheBackendSetsTagsThatNameAUser() async throws {
        try await withTestService { client, service in
            let app = try await service.createVerifiedApp(client: client)
            for (tag, path) in [("username:alice", "POST"), ("user:alice", "POST"), ("UserName:alice", "POST"), ("user:bob", "PATCH")] {
                let body = Self.registration(alias: nil, extra: #", "tags": ["beta", "\#(tag)"]"#)
                let refused: TestResponse
                if path == "POST" {
                    refused = try await client.signed(.post, "/api/v1/device_tokens", body: body, as: app.deviceCredential)
                } else {
                    let created = try await client.signed(
                        .post, "/api/v1/device_tokens", body: Self.registration(token: Self.tokenB, alias: nil), as: app.deviceCredential)
                    let id = try #require(created.json["id"]?.intValue)
                    refused = try await client.signed(
                        .patch, "/api/v1/device_tokens/\(id)", body: #"{"device_token": {"tags": ["\#(tag)"]}}"#, as: app.deviceCredential)
                }
                #expect(refused.status == .forbidden, "\(tag) by \(path)")
                #expect(refused.errorCode == "reserved_tag")
                #expect(refused.errorField == "device_token.tags")
            }
            #expect(
                try await service.integer(
                    "SELECT count(*) FROM devices WHERE app_id = \(app.app.id) AND tags && ARRAY['username:alice', 'user:alice', 'UserName:alice', 'user:bob']"
                ) == 0)

            // Tags that only look alike are the device's to set.
            let own = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(alias: nil, extra: #", "tags": ["beta", "users:many", "usernames"]"#),
                as: app.deviceCredential
            )
            #expect(own.status == .ok)
            let id = try #require(own.json["id"]?.intValue)
            // The backend sets a user's tag.
            let backend = try await client.signed(.put, "/api/v1/device_tokens/\(id)/tags", body: #"{"tags": ["username:alice"]}"#, as: app.serverCredential)
            #expect(backend.status == .ok)
            #expect(backend.json["tags"] == .array([.string("username:alice")]))

            // Without verified aliases a device's tags are its own business, as before.
            try await client.admin(.patch, "/admin/apps/\(app.app.id)", body: #"{"require_verified_alias": false}"#, service: service)
            let open = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(token: Self.tokenB, alias: nil, extra: #", "tags": ["username:carol"]"#),
                as: app.deviceCredential
            )
            #expect(open.status == .ok)
        }
    }
}
