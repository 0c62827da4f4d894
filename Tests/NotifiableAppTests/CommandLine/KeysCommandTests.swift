import Crypto
import Foundation
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// The master key can be rotated: `notifiable keys rotate` re-seals every secret with the new
/// key, opening them with the old one, after which the old key is no longer needed.
@Suite struct KeysCommandTests {
    @Test func rotateResealsEverySecretSoTheOldKeyCanBeDropped() async throws {
        let old = MasterKey.generate(), new = MasterKey.generate()
        try await TestDatabase.withFreshDatabase { url in
            let environment = ["DATABASE_URL": url, "NOTIFIABLE_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path]
            let created = try await NotifiableProcess.run(
                ["apps", "create", "--name", "Keys", "--json"], environment: environment.merging(["NOTIFIABLE_MASTER_KEY": old.base64]) { $1 })
            #expect(created.status == 0, "\(created.output)")
            let printed = try JSONValue.decode(Array(created.output.utf8))
            let appID = try #require(printed["id"]?.intValue)
            let accessID = try #require(printed["server_credentials"]?["access_id"]?.stringValue)
            let secret = try #require(printed["server_credentials"]?["secret_key"]?.stringValue)
            let apnsKey = P256.Signing.PrivateKey().pemRepresentation

            try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { postgres in
                let apns = { (keys: MasterKeyring) in APNsSettingsStore(client: postgres, keys: keys, logger: TestDatabase.logger) }
                let apps = { (keys: MasterKeyring) in AppStore(client: postgres, keys: keys, logger: TestDatabase.logger) }
                let settings = APNsSettings(keyID: "K", teamID: "T", bundleID: "b", privateKeyPEM: apnsKey, environment: .sandbox)
                #expect(try await apns(MasterKeyring(current: old)).save(settings, appID: appID))
                let webhook = try #require(
                    try await WebhookStore(client: postgres, keys: MasterKeyring(current: old), logger: TestDatabase.logger)
                        .create(appID: appID, WebhookSubscription(url: "https://example.com/hooks", eventNames: nil)))

                // Without the old key, nothing sealed with it can be re-sealed: the command says which variable to set.
                let refused = try await NotifiableProcess.run(
                    ["keys", "rotate"], environment: environment.merging(["NOTIFIABLE_MASTER_KEY": new.base64]) { $1 })
                #expect(refused.status != 0)
                #expect(refused.output.contains("NOTIFIABLE_PREVIOUS_MASTER_KEYS"), "\(refused.output)")

                let rotated = try await NotifiableProcess.run(
                    ["keys", "rotate"],
                    environment: environment.merging([
                        "NOTIFIABLE_MASTER_KEY": new.base64, "NOTIFIABLE_PREVIOUS_MASTER_KEYS": "\(MasterKey.generate().base64),\(old.base64)",
                    ]) { $1 })
                #expect(rotated.status == 0, "\(rotated.output)")
                #expect(rotated.output.contains("Re-sealed 4 secrets"), "\(rotated.output)")

                let newOnly = MasterKeyring(current: new)
                #expect(try await apps(newOnly).credential(accessID: accessID)?.secretKey == secret)
                #expect(try await apns(newOnly).settings(appID: appID)?.privateKeyPEM == apnsKey)
                await #expect(throws: MasterKeyError.self) { try await apps(MasterKeyring(current: old)).credential(accessID: accessID) }
                let sealedWebhook = try await postgres.query(
                    "SELECT sealed_secret, master_key_id FROM webhooks WHERE id = \(webhook.webhook.id)", logger: TestDatabase.logger
                ).decode((Data, String?).self).first { _ in true }
                let resealed = try #require(sealedWebhook)
                #expect(resealed.1 == new.id)
                #expect(try newOnly.open(Array(resealed.0), keyID: resealed.1, boundTo: "webhook:\(webhook.webhook.id)") == webhook.secret)
                let stale = try await postgres.query(
                    """
                    SELECT (SELECT count(*) FROM app_credentials WHERE master_key_id IS DISTINCT FROM \(new.id))
                         + (SELECT count(*) FROM apns_settings WHERE master_key_id IS DISTINCT FROM \(new.id))
                    """,
                    logger: TestDatabase.logger
                ).decode(Int64.self).first { _ in true }
                #expect(stale == 0)

                let again = try await NotifiableProcess.run(["keys", "rotate"], environment: environment.merging(["NOTIFIABLE_MASTER_KEY": new.base64]) { $1 })
                #expect(again.status == 0)
                #expect(again.output.contains("Re-sealed 0 secrets"), "\(again.output)")
            }
        }
    }

    @Test func keyIDsAreStableAndDistinct() {
        let key = MasterKey.generate()
        #expect(key.id == MasterKey(base64: key.base64)!.id)
        #expect(key.id != MasterKey.generate().id)
        #expect(key.id.count == 12)
    }
}
