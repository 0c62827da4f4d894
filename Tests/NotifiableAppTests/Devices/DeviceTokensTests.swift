import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableTesting
import Testing

/// CONTRACT §3: the device registry as the Notifiable SDKs use it.
@Suite struct DeviceTokensTests {
    static let tokenA = String(repeating: "a1", count: 32)
    static let tokenB = String(repeating: "b2", count: 32)

    static func registration(token: String, alias: String? = nil, extra: String = "") -> String {
        let aliasField = alias.map { #", "user_alias": "\#($0)""# } ?? ""
        return #"{"device_token": {"provider": "apns", "token": "\#(token)", "name": "iPhone"\#(aliasField)\#(extra)}}"#
    }

    @Test func registerReassignAnonymiseAndCaseInsensitiveTokens() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let device = app.deviceCredential

            let first = try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(token: Self.tokenA, alias: "alice"), as: device)
            #expect(first.status == .ok)
            let id = try #require(first.json["id"]?.intValue)
            #expect(first.json["user_alias"]?.stringValue == "alice")

            // The same token for another user: the same row, moved to bob.
            let moved = try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(token: Self.tokenA, alias: "bob"), as: device)
            #expect(moved.json["id"]?.intValue == id)
            #expect(moved.json["user_alias"]?.stringValue == "bob")

            // Again with no alias: anonymised.
            let anonymous = try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(token: Self.tokenA), as: device)
            #expect(anonymous.json["id"]?.intValue == id)
            #expect(anonymous.json["user_alias"] == .null)

            // The token in upper case is the same device.
            let upper = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(token: Self.tokenA.uppercased(), alias: "carol"), as: device)
            #expect(upper.json["id"]?.intValue == id)
            #expect(upper.json["token"]?.stringValue == Self.tokenA)

            let rows = try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app.app.id)")
            #expect(rows == 1)
            let bobs = try await client.signed(.get, "/api/v1/device_tokens?user_alias=bob", as: device)
            #expect(bobs.json.arrayValue?.isEmpty == true)
            let carols = try await client.signed(.get, "/api/v1/device_tokens?user_alias=carol", as: device)
            #expect(carols.json[0]?["id"]?.intValue == id)
        }
    }

    @Test func registrationKeepsLocaleCustomAndPlatformProperties() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let body = Self.registration(
                token: Self.tokenA, alias: "alice",
                extra: #", "language": "EN", "country": "gb", "custom_properties": "{\"onsite\":true}", "app_version": "2.1""#
            )
            let response = try await client.signed(.post, "/api/v1/device_tokens", body: body, as: app.deviceCredential)
            #expect(response.status == .ok)
            #expect(response.json["language"]?.stringValue == "en")
            #expect(response.json["country"]?.stringValue == "gb")
            #expect(response.json["locale"]?.stringValue == "en_GB")
            #expect(response.json["custom_properties"]?["onsite"] == .bool(true))
            #expect(response.json["platform_properties"]?["app_version"]?.stringValue == "2.1")
            #expect(response.json["provider"]?.stringValue == "apns")

            // Top-level fields (plain REST clients) and the "gcm" alias work too.
            let fcm = try await client.signed(
                .post, "/api/v1/device_tokens", body: #"{"provider": "gcm", "token": "fcm:Token_1-x", "user_alias": "alice"}"#,
                as: app.deviceCredential
            )
            #expect(fcm.status == .ok)
            #expect(fcm.json["provider"]?.stringValue == "fcm")
            let alices = try await client.signed(.get, "/api/v1/device_tokens.json?user%5Balias%5D=alice", as: app.deviceCredential)
            #expect(alices.json.arrayValue?.count == 2, "\(alices.status) \(String(buffer: alices.body))")
        }
    }

    @Test func updateAnonymiseAndMergeOnTokenChange() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let device = app.deviceCredential
            let a = try #require(
                try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(token: Self.tokenA, alias: "alice"), as: device).json["id"]?
                    .intValue)
            let b = try #require(
                try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(token: Self.tokenB, alias: "bob"), as: device).json["id"]?
                    .intValue)

            // A partial update changes only what it sends.
            let renamed = try await client.signed(
                .patch, "/api/v1/device_tokens/\(a)", body: #"{"device_token": {"name": "iPad", "language": "fr"}}"#, as: device)
            #expect(renamed.status == .ok)
            #expect(renamed.json["name"]?.stringValue == "iPad")
            #expect(renamed.json["language"]?.stringValue == "fr")
            #expect(renamed.json["user_alias"]?.stringValue == "alice")

            // "user_alias": "" anonymises.
            let anonymised = try await client.signed(.put, "/api/v1/device_tokens/\(a)", body: #"{"device_token": {"user_alias": ""}}"#, as: device)
            #expect(anonymised.json["user_alias"] == .null)
            #expect(anonymised.json["name"]?.stringValue == "iPad")

            // Moving A to B's token merges them: one row survives, and it is A.
            let merged = try await client.signed(
                .patch, "/api/v1/device_tokens/\(a)", body: #"{"device_token": {"token": "\#(Self.tokenB.uppercased())"}}"#, as: device)
            #expect(merged.status == .ok)
            #expect(merged.json["id"]?.intValue == a)
            #expect(merged.json["token"]?.stringValue == Self.tokenB)
            let rows = try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app.app.id) AND merged_into IS NULL")
            #expect(rows == 1)
            let retired = try await service.integer("SELECT merged_into FROM devices WHERE id = \(b)")
            #expect(retired == a)
            let gone = try await client.signed(.patch, "/api/v1/device_tokens/\(b)", body: #"{"name": "x"}"#, as: device)
            #expect(gone.status == .notFound)

            // The provider of a device cannot change through an update.
            let providerChange = try await client.signed(.patch, "/api/v1/device_tokens/\(a)", body: #"{"provider": "fcm"}"#, as: device)
            #expect(providerChange.status == .unprocessableContent)
            #expect(providerChange.errorField == "provider")
        }
    }

    @Test func unregisterHidesTheDeviceAndASecondDeleteIs404() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let device = app.deviceCredential
            let id = try #require(
                try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(token: Self.tokenA, alias: "alice"), as: device).json["id"]?
                    .intValue)

            let deleted = try await client.signed(.delete, "/api/v1/device_tokens/\(id)", as: device)
            #expect(deleted.status == .noContent)
            let listed = try await client.signed(.get, "/api/v1/device_tokens?user_alias=alice", as: device)
            #expect(listed.json.arrayValue?.isEmpty == true)
            let again = try await client.signed(.delete, "/api/v1/device_tokens/\(id)", as: device)
            #expect(again.status == .notFound)
            #expect(again.errorCode == "not_found")
            let patched = try await client.signed(.patch, "/api/v1/device_tokens/\(id)", body: #"{"name": "x"}"#, as: device)
            #expect(patched.status == .notFound)

            // The row stays for history, marked unregistered.
            let kept = try await service.integer("SELECT count(*) FROM devices WHERE id = \(id) AND unregistered_at IS NOT NULL")
            #expect(kept == 1)

            // Registering the token again revives the same row.
            let revived = try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(token: Self.tokenA, alias: "alice"), as: device)
            #expect(revived.json["id"]?.intValue == id)
            let relisted = try await client.signed(.get, "/api/v1/device_tokens?user_alias=alice", as: device)
            #expect(relisted.json.arrayValue?.count == 1)
        }
    }

    @Test func anotherAppsCredentialsCannotSeeOrTouchTheDevice() async throws {
        try await withTestService { client, service in
            let appA = try await service.createApp(name: "A")
            let appB = try await service.createApp(name: "B")
            let id = try #require(
                try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration(token: Self.tokenA, alias: "alice"), as: appA.deviceCredential)
                    .json["id"]?.intValue)

            for credential in [appB.deviceCredential, appB.serverCredential] {
                let patch = try await client.signed(.patch, "/api/v1/device_tokens/\(id)", body: #"{"name": "mine"}"#, as: credential)
                #expect(patch.status == .notFound)
                let delete = try await client.signed(.delete, "/api/v1/device_tokens/\(id)", as: credential)
                #expect(delete.status == .notFound)
                let list = try await client.signed(.get, "/api/v1/device_tokens?user_alias=alice", as: credential)
                #expect(list.json.arrayValue?.isEmpty == true)
            }
            // B registering the same token makes a device of B's own; A's is untouched.
            let own = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.registration(token: Self.tokenA, alias: "eve"), as: appB.deviceCredential)
            #expect(own.json["id"]?.intValue != id)
            let aList = try await client.signed(.get, "/api/v1/device_tokens?user_alias=alice", as: appA.deviceCredential)
            #expect(aList.json[0]?["name"]?.stringValue == "iPhone")
        }
    }
}
