import Foundation
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// CONTRACT §1: `notifiable apps create --json` prints exactly one JSON object with the app and
/// both credential pairs, and the secrets it prints are the ones stored.
@Suite struct AppsCommandTests {
    @Test func createWithJSONPrintsTheContractsObjectWhoseCredentialsWork() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let (status, text) = try await NotifiableProcess.run(
                ["apps", "create", "--name", "Shop", "--json"],
                environment: [
                    "DATABASE_URL": url, "NOTIFIABLE_MASTER_KEY": TestDatabase.masterKey.base64,
                    "NOTIFIABLE_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path,
                ]
            )
            #expect(status == 0, "\(text)")

            let printed = try JSONValue.decode(Array(text.utf8))
            #expect(Set(printed.objectValue?.keys.map { $0 } ?? []) == ["id", "name", "device_credentials", "server_credentials"])
            #expect(printed["name"]?.stringValue == "Shop")
            let appID = try #require(printed["id"]?.intValue)

            try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger) { postgres in
                let apps = AppStore(client: postgres, keys: MasterKeyring(current: TestDatabase.masterKey), logger: TestDatabase.logger)
                for (key, role) in [("device_credentials", CredentialRole.device), ("server_credentials", .server)] {
                    let pair = try #require(printed[key])
                    #expect(Set(pair.objectValue?.keys.map { $0 } ?? []) == ["access_id", "secret_key"])
                    let accessID = try #require(pair["access_id"]?.stringValue)
                    let secret = try #require(pair["secret_key"]?.stringValue)
                    #expect(Data(base64Encoded: secret)?.count == 32)
                    let stored = try #require(try await apps.credential(accessID: accessID))
                    #expect(stored.appID == appID)
                    #expect(stored.role == role)
                    #expect(stored.secretKey == secret)
                }
            }
        }
    }
}
