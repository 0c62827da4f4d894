import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Re-seals every stored secret with the current master key, so that earlier keys can be
/// retired. Run after setting a new `NOTIFIABLE_MASTER_KEY` with the old one in
/// `NOTIFIABLE_PREVIOUS_MASTER_KEYS`; running it again finds nothing left to do.
public struct SealedSecretStore: Sendable {
    let client: Database
    let keys: MasterKeyring
    let logger: Logger

    public init(client: Database, keys: MasterKeyring, logger: Logger) {
        self.client = client
        self.keys = keys
        self.logger = logger
    }

    /// How many secrets of each kind were re-sealed.
    public struct Report: Sendable, Equatable {
        public var credentials = 0
        public var apnsKeys = 0
        public var fcmServiceAccounts = 0
        public var webPushKeys = 0
        public var webhookSecrets = 0
        public var total: Int { credentials + apnsKeys + fcmServiceAccounts + webPushKeys + webhookSecrets }
    }

    /// One table's sealed secrets: where they live and what each is bound to.
    private struct SealedColumn {
        let table: String
        let keyColumn: String
        let secretColumn: String
        let context: @Sendable (String) -> String

        init(table: String, keyColumn: String, secretColumn: String, context: @escaping @Sendable (String) -> String) {
            self.table = table
            self.keyColumn = keyColumn
            self.secretColumn = secretColumn
            self.context = context
        }

        init(gatewaySettings settings: GatewaySettingsTable) {
            self.init(table: settings.name, keyColumn: "app_id", secretColumn: settings.sealedColumn) { settings.sealingContext(appID: $0) }
        }
    }

    private static let columns = [
        SealedColumn(table: "app_credentials", keyColumn: "access_id", secretColumn: "sealed_secret") { $0 },
        SealedColumn(gatewaySettings: .apns),
        SealedColumn(gatewaySettings: .fcm),
        SealedColumn(gatewaySettings: .webpush),
        SealedColumn(table: "webhooks", keyColumn: "id", secretColumn: "sealed_secret") { "webhook:\($0)" },
    ]

    /// All in one transaction: either every secret is re-sealed or none is.
    public func resealAll() async throws -> Report {
        try await client.withTransaction(logger: logger) { connection in
            var counts: [Int] = []
            for column in Self.columns {
                counts.append(try await reseal(column, on: connection))
            }
            return Report(
                credentials: counts[0], apnsKeys: counts[1], fcmServiceAccounts: counts[2], webPushKeys: counts[3], webhookSecrets: counts[4]
            )
        }
    }

    private func reseal(_ column: SealedColumn, on connection: PostgresConnection) async throws -> Int {
        // Identifiers come from the fixed list above, never from input.
        var currentKey = PostgresBindings()
        currentKey.append(keys.current.id)
        let rows = try await connection.query(
            PostgresQuery(
                unsafeSQL: """
                    SELECT \(column.keyColumn)::text, \(column.secretColumn), master_key_id FROM \(column.table)
                    WHERE master_key_id IS DISTINCT FROM $1 FOR UPDATE
                    """, binds: currentKey),
            logger: logger
        )
        var opened: [(key: String, secret: String)] = []
        for try await (key, sealed, keyID) in rows.decode((String, Data, String?).self) {
            opened.append((key, try keys.open(Array(sealed), keyID: keyID, boundTo: column.context(key))))
        }
        for (key, secret) in opened {
            let sealed = try keys.seal(secret, boundTo: column.context(key))
            var binds = PostgresBindings()
            try binds.append(Data(sealed.bytes))
            binds.append(sealed.keyID)
            binds.append(key)
            try await connection.query(
                PostgresQuery(
                    unsafeSQL: "UPDATE \(column.table) SET \(column.secretColumn) = $1, master_key_id = $2 WHERE \(column.keyColumn)::text = $3",
                    binds: binds
                ),
                logger: logger
            )
        }
        return opened.count
    }
}
