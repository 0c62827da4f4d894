import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

@testable import NotifiableApp

/// `POST /api/v1/users/:alias/tokens`: the app's backend mints short-lived user tokens; the
/// verifier accepts them only for their app, before they expire, and until the key is rotated.
@Suite struct UserTokensTests {
    static func date(_ text: String?) throws -> Date {
        try Date(try #require(text), strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    @Test func mintingNeedsServerCredentialsAndLivesAtMostAnHour() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let refused = try await client.signed(.post, "/api/v1/users/alice/tokens", as: app.deviceCredential)
            #expect(refused.status == .forbidden)
            #expect(refused.errorCode == "server_credentials_required")

            let before = Date()
            let minted = try await client.signed(.post, "/api/v1/users/alice/tokens", as: app.serverCredential)
            #expect(minted.status == .created)
            #expect(Set(minted.json.objectValue?.keys.map { $0 } ?? []) == ["token", "user_alias", "expires_at"])
            #expect(minted.json["user_alias"]?.stringValue == "alice")
            let expiresAt = try Self.date(minted.json["expires_at"]?.stringValue)
            #expect(expiresAt <= Date() + 3600)
            #expect(expiresAt > before + 3590)
            let token = try UserToken.unverified(try #require(minted.json["token"]?.stringValue))
            #expect(token.appID == app.app.id && token.userAlias == "alice" && token.generation == 1)
            #expect(token.expiresAt == expiresAt)

            let short = try await client.signed(.post, "/api/v1/users/alice/tokens", body: #"{"ttl_seconds": 60}"#, as: app.serverCredential)
            #expect(short.status == .created)
            let shortExpiry = try Self.date(short.json["expires_at"]?.stringValue)
            #expect(shortExpiry <= Date() + 60 && shortExpiry > before + 50)
        }
    }

    @Test func ttlOutsideItsBoundsAndUnknownFieldsAreRefused() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let cases: [(String, String, String)] = [
                (#"{"ttl_seconds": 59}"#, "invalid_ttl", "ttl_seconds"),
                (#"{"ttl_seconds": 3601}"#, "invalid_ttl", "ttl_seconds"),
                (#"{"ttl_seconds": "600"}"#, "invalid_ttl", "ttl_seconds"),
                (#"{"ttl_seconds": 600.5}"#, "invalid_ttl", "ttl_seconds"),
                (#"{"ttl_seconds": 600, "scope": "all"}"#, "unknown_field", "scope"),
            ]
            for (body, code, field) in cases {
                let refused = try await client.signed(.post, "/api/v1/users/alice/tokens", body: body, as: app.serverCredential)
                #expect(refused.status == .unprocessableContent, "\(body)")
                #expect(refused.errorCode == code, "\(body)")
                #expect(refused.errorField == field, "\(body)")
            }
            let array = try await client.signed(.post, "/api/v1/users/alice/tokens", body: "[]", as: app.serverCredential)
            #expect(array.status == .unprocessableContent)
            let broken = try await client.signed(.post, "/api/v1/users/alice/tokens", body: "{", as: app.serverCredential)
            #expect(broken.status == .badRequest)
            for body in [#"{"ttl_seconds": 60}"#, #"{"ttl_seconds": 3600}"#, #"{"ttl_seconds": null}"#, "{}"] {
                #expect(try await client.signed(.post, "/api/v1/users/alice/tokens", body: body, as: app.serverCredential).status == .created)
            }
        }
    }

    @Test func theAliasInThePathIsPercentDecoded() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let minted = try await client.signed(.post, "/api/v1/users/alice%40example.com/tokens", as: app.serverCredential)
            #expect(minted.status == .created)
            #expect(minted.json["user_alias"]?.stringValue == "alice@example.com")
            #expect(try UserToken.unverified(try #require(minted.json["token"]?.stringValue)).userAlias == "alice@example.com")
            let spaced = try await client.signed(.post, "/api/v1/users/Ada%20Lovelace/tokens", as: app.serverCredential)
            #expect(spaced.json["user_alias"]?.stringValue == "Ada Lovelace")
            let tooLong = try await client.signed(.post, "/api/v1/users/\(String(repeating: "a", count: 256))/tokens", as: app.serverCredential)
            #expect(tooLong.status == .unprocessableContent)
            #expect(tooLong.errorField == "alias")
        }
    }

    @Test func theVerifierRefusesRevokedForeignForgedAndExpiredTokens() async throws {
        try await withTestService { _, service in
            let app = try await service.createApp(), other = try await service.createApp()
            let settings = UserTokenSettingsStore(client: service.postgres, logger: TestDatabase.logger)
            let now = Date()
            let verifier = UserTokenVerifier(settings: settings, keys: service.configuration.keys, now: { now })
            func refusal(_ text: String, by verifier: UserTokenVerifier = verifier) async -> APIError? {
                do {
                    _ = try await verifier.verify(text)
                    return nil
                } catch {
                    return error as? APIError
                }
            }

            let minted = try #require(try await verifier.mint(appID: app.app.id, userAlias: "alice", lifetime: 600))
            let text = verifier.signed(minted)
            #expect(try await verifier.verify(text) == minted)
            // A token of the other app verifies as the other app's, never as this one's.
            let foreign = try await verifier.verify(
                verifier.signed(try #require(try await verifier.mint(appID: other.app.id, userAlias: "alice", lifetime: 600))))
            #expect(foreign.appID == other.app.id)
            // This app's claims signed with the other app's key.
            let forged = minted.signed(with: service.configuration.keys.current.userTokenKey(appID: other.app.id, generation: 1))
            #expect(await refusal(forged)?.code == "invalid_user_token")
            #expect(await refusal(forged)?.status == .unauthorized)
            // An app that does not exist.
            let orphan = UserToken(appID: Int64.max, userAlias: "alice", generation: 1, issuedAt: now, expiresAt: now + 600)
            #expect(await refusal(verifier.signed(orphan))?.code == "invalid_user_token")
            #expect(await refusal("not a token")?.code == "invalid_user_token")

            let later = UserTokenVerifier(settings: settings, keys: service.configuration.keys, now: { now + 601 })
            let expired = await refusal(text, by: later)
            #expect(expired?.code == "invalid_user_token")
            #expect(expired?.message.contains("expired") == true)

            #expect(try await settings.rotateKey(appID: app.app.id)?.generation == 2)
            let revoked = await refusal(text)
            #expect(revoked?.status == .unauthorized)
            #expect(revoked?.message.contains("revoked") == true)
            let renewed = try #require(try await verifier.mint(appID: app.app.id, userAlias: "alice", lifetime: 600))
            #expect(renewed.generation == 2)
            #expect(try await verifier.verify(verifier.signed(renewed)) == renewed)
            // The other app's tokens are untouched by this app's rotation.
            #expect(try await verifier.verify(verifier.signed(foreign)) == foreign)
        }
    }
}
