import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Apps (tenants) and their API credentials.
public struct AppRegistry: Sendable {
    public let client: PostgresClient
    let masterKey: MasterKey
    public let logger: Logger

    public init(client: PostgresClient, masterKey: MasterKey, logger: Logger) {
        self.client = client
        self.masterKey = masterKey
        self.logger = logger
    }

    /// A new app with its two credential pairs; the secrets are returned here and never again.
    public struct CreatedApp: Sendable {
        public let app: App
        public let deviceCredential: Credential
        public let serverCredential: Credential
    }

    /// A credential as the authentication check needs it.
    public struct StoredCredential: Sendable {
        public let appID: Int64
        public let role: CredentialRole
        public let secretKey: String
    }

    public func create(name: String) async throws -> CreatedApp {
        let device = Credential.generate(role: .device)
        let server = Credential.generate(role: .server)
        let sealed = try [device, server].map { try masterKey.seal($0.secretKey, boundTo: $0.accessID) }
        return try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                "INSERT INTO apps (name) VALUES (\(name)) RETURNING id, name, created_at", logger: logger
            )
            var created: App?
            for try await (id, name, createdAt) in rows.decode((Int64, String, Date).self) {
                created = App(id: id, name: name, createdAt: createdAt)
            }
            guard let app = created else { throw StoreError(description: "INSERT INTO apps returned no row") }
            for (credential, secret) in zip([device, server], sealed) {
                try await connection.query(
                    """
                    INSERT INTO app_credentials (access_id, app_id, role, sealed_secret)
                    VALUES (\(credential.accessID), \(app.id), \(credential.role.rawValue), \(Data(secret)))
                    """,
                    logger: logger
                )
            }
            return CreatedApp(app: app, deviceCredential: device, serverCredential: server)
        }
    }

    public func list() async throws -> [App] {
        var apps: [App] = []
        let rows = try await client.query("SELECT id, name, created_at FROM apps ORDER BY id", logger: logger)
        for try await (id, name, createdAt) in rows.decode((Int64, String, Date).self) {
            apps.append(App(id: id, name: name, createdAt: createdAt))
        }
        return apps
    }

    /// The live credential with this access id, its secret opened; nil when unknown or revoked.
    public func credential(accessID: String) async throws -> StoredCredential? {
        let rows = try await client.query(
            """
            SELECT app_id, role, sealed_secret FROM app_credentials
            WHERE access_id = \(accessID) AND revoked_at IS NULL
            """,
            logger: logger
        )
        for try await (appID, role, sealed) in rows.decode((Int64, String, Data).self) {
            guard let role = CredentialRole(rawValue: role) else { return nil }
            let secret = try masterKey.open(Array(sealed), boundTo: accessID)
            return StoredCredential(appID: appID, role: role, secretKey: secret)
        }
        return nil
    }
}
