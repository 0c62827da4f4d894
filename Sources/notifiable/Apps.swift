import ArgumentParser
import Foundation
import NotifiableApp
import NotifiableCore
import NotifiableStore

struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage apps (tenants) and their credentials.",
        subcommands: [Create.self, List.self, SetAPNs.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an app and print its credentials (shown once).")

        @Option(help: "The app's name.") var name: String
        @Flag(help: "Print exactly one JSON object.") var json = false

        func validate() throws {
            let trimmed = name.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, trimmed.count <= App.maxNameLength else {
                throw ValidationError("--name must be 1 to \(App.maxNameLength) characters.")
            }
        }

        func run() async throws {
            let created = try await withAppRegistry { apps in
                try await apps.create(name: name.trimmingCharacters(in: .whitespaces))
            }
            print(json ? CreatedAppJSON(created).jsonText() : CreatedAppJSON(created).humanText())
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List apps.")

        func run() async throws {
            let apps = try await withAppRegistry { try await $0.list() }
            for app in apps { print("\(app.id)\t\(app.name)\t\(app.createdAt.formatted(.iso8601))") }
        }
    }
}

extension Apps {
    struct SetAPNs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-apns",
            abstract: "Set how an app reaches APNs: its token-signing key (.p8), key id, team id and bundle id."
        )

        @Option(help: "The app's id (see `notifiable apps list`).") var app: Int64
        @Option(help: "The key's 10-character id from Apple.") var keyID: String
        @Option(help: "The Apple developer team id.") var teamID: String
        @Option(help: "The app's bundle id (the APNs topic).") var bundleID: String
        @Option(help: "Path of the .p8 key file.") var keyFile: String
        @Option(help: "production or sandbox.") var environment: String = "production"
        @Option(help: "Send to this https URL instead of Apple's host (a proxy or a test gateway).") var endpoint: String?
        @Option(help: "A CA certificate (PEM file) to trust for --endpoint.") var caFile: String?

        func run() async throws {
            let key = try String(contentsOfFile: keyFile, encoding: .utf8)
            let ca = try caFile.map { try String(contentsOfFile: $0, encoding: .utf8) }
            var body: [String: JSONValue] = [
                "key_id": .string(keyID), "team_id": .string(teamID), "bundle_id": .string(bundleID),
                "private_key": .string(key), "environment": .string(environment),
            ]
            if let endpoint { body["endpoint"] = .string(endpoint) }
            if let ca { body["trusted_ca_pem"] = .string(ca) }
            let settings: APNsSettings
            do {
                settings = try APNsSettingsInput.parse(.object(body))
            } catch let error as APIError {
                throw ValidationError("\(error.field.map { "--\($0.replacingOccurrences(of: "_", with: "-")): " } ?? "")\(error.message)")
            }
            let appID = app
            let masterKey = try ServerConfiguration.fromEnvironment(ProcessInfo.processInfo.environment).masterKey
            let saved = try await withAppRegistry { apps in
                try await APNsSettingsStore(client: apps.client, masterKey: masterKey, logger: apps.logger).save(settings, appID: appID)
            }
            guard saved else { throw ValidationError("There is no app \(appID).") }
            print("App \(appID) sends to APNs at \(settings.baseURL) as \(settings.bundleID).")
        }
    }
}

/// Runs `body` with the app registry of the configured database, migrated first so that a
/// fresh database works without a separate `notifiable migrate`.
func withAppRegistry<T: Sendable>(_ body: @Sendable (AppRegistry) async throws -> T) async throws -> T {
    let environment = ProcessInfo.processInfo.environment
    let configuration = try ServerConfiguration.fromEnvironment(environment)
    let logger = bootstrapLogging(level: .notice)
    return try await withPostgresClient(try postgresConfiguration(configuration), logger: logger) { client in
        try await migrate(configuration, postgres: client, logger: logger)
        return try await body(AppRegistry(client: client, masterKey: configuration.masterKey, logger: logger))
    }
}

/// `apps create` output: CONTRACT §1's JSON object, or the same for a person.
struct CreatedAppJSON: Encodable {
    struct Pair: Encodable {
        let accessID: String
        let secretKey: String
        enum CodingKeys: String, CodingKey {
            case accessID = "access_id"
            case secretKey = "secret_key"
        }
    }
    let id: Int64
    let name: String
    let deviceCredentials: Pair
    let serverCredentials: Pair

    enum CodingKeys: String, CodingKey {
        case id, name
        case deviceCredentials = "device_credentials"
        case serverCredentials = "server_credentials"
    }

    init(_ created: AppRegistry.CreatedApp) {
        id = created.app.id
        name = created.app.name
        deviceCredentials = Pair(accessID: created.deviceCredential.accessID, secretKey: created.deviceCredential.secretKey)
        serverCredentials = Pair(accessID: created.serverCredential.accessID, secretKey: created.serverCredential.secretKey)
    }

    func jsonText() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    func humanText() -> String {
        """
        Created app \(id) "\(name)". The secret keys are shown only now: store them.

        Device credentials (ship these in the mobile app):
          access id   \(deviceCredentials.accessID)
          secret key  \(deviceCredentials.secretKey)

        Server credentials (keep these on the app's backend):
          access id   \(serverCredentials.accessID)
          secret key  \(serverCredentials.secretKey)
        """
    }
}
