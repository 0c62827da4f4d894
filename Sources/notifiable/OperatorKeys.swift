import ArgumentParser
import Foundation
import NotifiableCore
import NotifiableStore

/// `notifiable operators keys`: admin API keys, each acting with its operator's role and apps.
struct OperatorKeys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Admin API keys: each acts as its operator, with the operator's role and apps. Shown once, stored as a digest.",
        subcommands: [Create.self, List.self, Revoke.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make a key for an operator and print it once.")

        @Option(help: "The operator whose role and apps the key carries.") var name: String
        @Option(help: "What the key is for (1 to 64 characters), shown in lists.") var label: String
        @Option(help: "Days until it stops working (1 to 3650); without it, until revoked.") var expiresInDays: Int?
        @Flag(help: "Print exactly one JSON object.") var json = false

        func validate() throws {
            if let problem = OperatorKey.labelProblem(label) { throw ValidationError("--label \(problem).") }
            if let days = expiresInDays, !(1...3650).contains(days) { throw ValidationError("--expires-in-days must be 1 to 3650.") }
        }

        func run() async throws {
            let (name, label) = (OperatorName.normalized(name) ?? name, label)
            let expiresAt = expiresInDays.map { Date().addingTimeInterval(TimeInterval($0) * 86_400) }
            let made = try await withStores(audit: CommandAudit("operators keys create", detail: ["operator": name, "label": label])) { stores in
                guard let account = try await OperatorStore(client: stores.client, logger: stores.logger).account(name: name) else {
                    throw CommandFailure("There is no operator \(name).")
                }
                return try await OperatorKeyStore(client: stores.client, logger: stores.logger).create(
                    operatorID: account.id, label: label, expiresAt: expiresAt)
            }
            if json {
                let object: [String: String] = [
                    "id": "\(made.record.id)", "key": made.key, "operator": made.record.operatorName, "label": made.record.label,
                    "expires_at": made.record.expiresAt.map { $0.formatted(.iso8601) } ?? "",
                ]
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                print(String(decoding: try encoder.encode(object), as: UTF8.self))
            } else {
                print("Key \(made.record.id) for \(made.record.operatorName) (shown once; send it as Authorization: Bearer …):")
                print(made.key)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List keys: id, operator, label, created, expires, state, last used.")

        @Option(help: "Only this operator's keys.") var name: String?

        func run() async throws {
            let name = name.map { OperatorName.normalized($0) ?? $0 }
            let keys = try await withStores { stores -> [OperatorKeyRecord] in
                var operatorID: Int64?
                if let name {
                    guard let account = try await OperatorStore(client: stores.client, logger: stores.logger).account(name: name) else {
                        throw CommandFailure("There is no operator \(name).")
                    }
                    operatorID = account.id
                }
                return try await OperatorKeyStore(client: stores.client, logger: stores.logger).list(operatorID: operatorID)
            }
            for key in keys {
                let state = key.revokedAt != nil ? "revoked" : (key.expiresAt.map { $0 <= Date() } == true ? "expired" : "live")
                print(
                    [
                        "\(key.id)", key.operatorName, key.label, key.createdAt.formatted(.iso8601),
                        key.expiresAt?.formatted(.iso8601) ?? "never", state, key.lastUsedAt?.formatted(.iso8601) ?? "unused",
                    ].joined(separator: "\t"))
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End a key now.")

        @Option(help: "The key's id (from keys list).") var id: Int64

        func run() async throws {
            let id = id
            let revoked = try await withStores(audit: CommandAudit("operators keys revoke", detail: ["api_key": "\(id)"])) { stores in
                try await OperatorKeyStore(client: stores.client, logger: stores.logger).revoke(id: id)
            }
            guard revoked else { throw CommandFailure("There is no live key \(id).") }
            print("Revoked key \(id).")
        }
    }
}
