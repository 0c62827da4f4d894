import ArgumentParser
import Foundation
import NotifiableApp
import NotifiableCore
import NotifiableStore

struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The master key that encrypts stored secrets.",
        discussion: """
            To rotate: make a new key (`notifiable keys generate`), set it as NOTIFIABLE_MASTER_KEY with the \
            old one in NOTIFIABLE_PREVIOUS_MASTER_KEYS on every process, run `notifiable keys rotate`, \
            then drop the old key.
            """,
        subcommands: [Generate.self, ID.self, Rotate.self]
    )

    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a new random master key (base64 of 32 bytes).")

        func run() async throws {
            print(MasterKey.generate().base64)
        }
    }

    struct ID: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the id of NOTIFIABLE_MASTER_KEY (recorded beside every secret it seals).")

        func run() async throws {
            print(try ServerConfiguration.fromEnvironment(ProcessInfo.processInfo.environment).masterKey.id)
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-encrypt every stored secret with NOTIFIABLE_MASTER_KEY (opening them with NOTIFIABLE_PREVIOUS_MASTER_KEYS)."
        )

        func run() async throws {
            let report = try await withStores(audit: CommandAudit("keys rotate")) { stores in
                try await SealedSecretStore(client: stores.client, keys: stores.configuration.keys, logger: stores.apps.logger).resealAll()
            }
            let id = try ServerConfiguration.fromEnvironment(ProcessInfo.processInfo.environment).masterKey.id
            print(
                "Re-sealed \(report.total) secrets with master key \(id): \(report.credentials) credentials, \(report.apnsKeys) APNs keys, \(report.fcmServiceAccounts) FCM service accounts, \(report.webPushKeys) Web Push keys, \(report.webhookSecrets) webhook secrets."
            )
        }
    }
}
