import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableTesting
import Testing

/// Rotating an app's user-token key revokes every token it minted, from the admin API or the
/// command line; `require_verified_alias` is switched the same two ways.
@Suite struct UserTokenRotationTests {
    static let registration = #"{"device_token": {"provider": "apns", "token": "\#(String(repeating: "c3", count: 32))", "user_alias": "alice"}}"#

    @Test func rotatingRevokesEarlierTokensAndNewOnesWork() async throws {
        try await withTestService { client, service in
            let app = try await service.createVerifiedApp(client: client)
            let before = try await client.userToken(for: "alice", as: app.serverCredential)
            #expect(try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration, as: app.deviceCredential, userToken: before).status == .ok)

            let rotated = try await client.admin(.post, "/admin/apps/\(app.app.id)/user_tokens/rotate", service: service)
            #expect(rotated.status == .ok)
            #expect(rotated.json == .object(["app_id": .integer(app.app.id), "user_token_generation": .integer(2)]))
            let shown = try await client.admin(.get, "/admin/apps/\(app.app.id)", service: service)
            #expect(shown.json["user_token_generation"]?.intValue == 2)

            let revoked = try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration, as: app.deviceCredential, userToken: before)
            #expect(revoked.status == .unauthorized)
            #expect(revoked.errorCode == "invalid_user_token")
            #expect(revoked.json["error"]?["message"]?.stringValue?.contains("revoked") == true)
            let after = try await client.userToken(for: "alice", as: app.serverCredential)
            #expect(try UserToken.unverified(after).generation == 2)
            #expect(try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration, as: app.deviceCredential, userToken: after).status == .ok)

            #expect(try await client.admin(.post, "/admin/apps/999999999/user_tokens/rotate", service: service).status == .notFound)
            #expect(try await client.admin(.post, "/admin/apps/nope/user_tokens/rotate", service: service).status == .notFound)
            let anonymous = try await client.execute(uri: "/admin/apps/\(app.app.id)/user_tokens/rotate", method: .post)
            #expect(anonymous.status == .unauthorized)
            #expect(try await client.admin(.get, "/admin/apps/\(app.app.id)", service: service).json["user_token_generation"]?.intValue == 2)
        }
    }

    @Test func theFlagIsSetThroughTheAdminAPIAndShownWithTheApp() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let listed = try await client.admin(.get, "/admin/apps", service: service)
            let entry = listed.json["data"]?.arrayValue?.first { $0["id"]?.intValue == app.app.id }
            #expect(entry?["require_verified_alias"] == .bool(false))
            #expect(entry?["user_token_generation"]?.intValue == 1)
            let both = try await client.admin(
                .patch, "/admin/apps/\(app.app.id)", body: #"{"name": "Verified", "require_verified_alias": true}"#, service: service
            )
            #expect(both.status == .ok)
            #expect(both.json["name"]?.stringValue == "Verified")
            #expect(both.json["require_verified_alias"] == .bool(true))
            // Another change leaves it as it is.
            let renamed = try await client.admin(.patch, "/admin/apps/\(app.app.id)", body: #"{"name": "Again"}"#, service: service)
            #expect(renamed.json["require_verified_alias"] == .bool(true))
            let wrong = try await client.admin(.patch, "/admin/apps/\(app.app.id)", body: #"{"require_verified_alias": "yes"}"#, service: service)
            #expect(wrong.status == .unprocessableContent)
            #expect(wrong.errorField == "require_verified_alias")
            #expect(try await client.admin(.patch, "/admin/apps/999999999", body: #"{"require_verified_alias": true}"#, service: service).status == .notFound)
        }
    }

    @Test func theCommandLineRotatesTheKeyAndSwitchesTheFlag() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let id = String(app.app.id)
            // The service's own database and master key: the commands act on what the API serves.
            let environment = [
                "DATABASE_URL": try TestDatabase.url(), "NOTIFIABLE_MASTER_KEY": TestDatabase.masterKey.base64,
                "NOTIFIABLE_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path,
            ]
            func run(_ arguments: String...) async throws -> (status: Int32, output: String) {
                try await NotifiableProcess.run(arguments, environment: environment)
            }
            let required = try await run("apps", "update", "--app", id, "--require-verified-alias", "true")
            #expect(required.status == 0, "\(required.output)")
            #expect(required.output.contains("only with that user's token"), "\(required.output)")
            let shown = try await run("apps", "show", "--app", id)
            let details = try JSONValue.decode(Array(shown.output.utf8))
            #expect(details["require_verified_alias"] == .bool(true))
            #expect(details["user_token_generation"]?.intValue == 1)
            #expect(try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration, as: app.deviceCredential).status == .forbidden)

            let before = try await client.userToken(for: "alice", as: app.serverCredential)
            #expect(try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration, as: app.deviceCredential, userToken: before).status == .ok)
            let rotated = try await run("apps", "rotate-user-token-key", "--app", id, "--json")
            #expect(rotated.status == 0, "\(rotated.output)")
            #expect(try JSONValue.decode(Array(rotated.output.utf8)) == .object(["app_id": .integer(app.app.id), "user_token_generation": .integer(2)]))
            let revoked = try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration, as: app.deviceCredential, userToken: before)
            #expect(revoked.status == .unauthorized && revoked.errorCode == "invalid_user_token")
            let after = try await client.userToken(for: "alice", as: app.serverCredential)
            #expect(try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration, as: app.deviceCredential, userToken: after).status == .ok)
            let human = try await run("apps", "rotate-user-token-key", "--app", id)
            #expect(human.status == 0 && human.output.contains("generation 3"), "\(human.output)")

            #expect(try await run("apps", "update", "--app", id, "--require-verified-alias", "false").status == 0)
            // Another process's change reaches the API's credential cache within a second: once it is
            // visible in the database, a request begun a second later sees it, however slow the
            // machine (a bound on the requests' own latency would measure the machine instead).
            #expect(try await service.integer("SELECT count(*) FROM apps WHERE id = \(app.app.id) AND NOT require_verified_alias") == 1)
            let switched = ContinuousClock.now
            _ = try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration, as: app.deviceCredential)
            try await Task.sleep(until: switched + .milliseconds(1050))
            #expect(try await client.signed(.post, "/api/v1/device_tokens", body: Self.registration, as: app.deviceCredential).status == .ok)
            #expect(try await run("apps", "update", "--app", id, "--require-verified-alias", "maybe").status != 0)
            let missing = try await run("apps", "rotate-user-token-key", "--app", "999999999")
            #expect(missing.status != 0 && missing.output.contains("There is no app 999999999"), "\(missing.output)")
        }
    }
}
