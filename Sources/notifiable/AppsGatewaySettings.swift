import ArgumentParser
import Foundation
import NotifiableApp
import NotifiableCore
import NotifiableStore

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
        @Option(help: "Send debug builds' pushes (devices registered with apns_environment sandbox) to this https URL instead of Apple's sandbox host.")
        var sandboxEndpoint: String?
        @Option(help: "A CA certificate (PEM file) to trust for --endpoint and --sandbox-endpoint.") var caFile: String?

        func run() async throws {
            var body: [String: JSONValue] = [
                "key_id": .string(keyID), "team_id": .string(teamID), "bundle_id": .string(bundleID),
                "private_key": .string(try readFile(keyFile, option: "--key-file")), "environment": .string(environment),
            ]
            if let endpoint { body["endpoint"] = .string(endpoint) }
            if let sandboxEndpoint { body["sandbox_endpoint"] = .string(sandboxEndpoint) }
            if let caFile { body["trusted_ca_pem"] = .string(try readFile(caFile, option: "--ca-file")) }
            let settings: APNsSettings
            do {
                settings = try APNsSettingsInput.parse(.object(body))
            } catch let error as APIError {
                throw commandLineError(error)
            }
            let appID = app
            guard try await withStores(audit: CommandAudit("apps set-apns", appID: appID), { try await $0.gateways.apns.save(settings, appID: appID) }) else {
                throw CommandFailure("There is no app \(appID).")
            }
            print("App \(appID) sends to APNs at \(settings.baseURL) as \(settings.bundleID).")
        }
    }

    struct RemoveAPNs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove-apns", abstract: "Remove an app's APNs settings (its key is deleted).")
        @Option(help: "The app's id.") var app: Int64
        func run() async throws { try await removeGatewaySettings(.apns, appID: app) }
    }

    struct SetFCM: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-fcm",
            abstract: "Set how an app reaches FCM: its Firebase service-account JSON."
        )

        @Option(help: "The app's id (see `notifiable apps list`).") var app: Int64
        @Option(help: "Path of the service-account JSON file (Firebase console → Project settings → Service accounts).") var serviceAccountFile: String
        @Option(help: "Send to this https URL instead of https://fcm.googleapis.com (a proxy or a test gateway).") var endpoint: String?
        @Option(help: "A CA certificate (PEM file) to trust for --endpoint and the account's token_uri.") var caFile: String?

        func run() async throws {
            var body: [String: JSONValue] = ["service_account": .string(try readFile(serviceAccountFile, option: "--service-account-file"))]
            if let endpoint { body["endpoint"] = .string(endpoint) }
            if let caFile { body["trusted_ca_pem"] = .string(try readFile(caFile, option: "--ca-file")) }
            let settings: FCMSettings
            do {
                settings = try FCMSettingsInput.parse(.object(body))
            } catch let error as APIError {
                throw commandLineError(error)
            }
            let appID = app
            guard try await withStores(audit: CommandAudit("apps set-fcm", appID: appID), { try await $0.gateways.fcm.save(settings, appID: appID) }) else {
                throw CommandFailure("There is no app \(appID).")
            }
            print("App \(appID) sends to FCM at \(settings.baseURL) for project \(settings.projectID) as \(settings.clientEmail).")
        }
    }

    struct RemoveFCM: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove-fcm", abstract: "Remove an app's FCM settings (its service account is deleted).")
        @Option(help: "The app's id.") var app: Int64
        func run() async throws { try await removeGatewaySettings(.fcm, appID: app) }
    }

    struct SetWebPush: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-webpush",
            abstract: "Let an app send to browsers: its VAPID key (kept, made, rotated or read from a file) and the contact push services see."
        )

        @Option(help: "The app's id (see `notifiable apps list`).") var app: Int64
        @Option(help: "mailto: address or https: URL where push services can reach you.") var subject: String
        @Option(help: "Path of a P-256 private key (PEM) to use instead of the app's own.") var keyFile: String?
        @Flag(help: "Make a new key pair: browsers subscribed with the old public key must subscribe again.") var rotate = false

        func run() async throws {
            var body: [String: JSONValue] = ["subject": .string(subject)]
            if let keyFile { body["private_key"] = .string(try readFile(keyFile, option: "--key-file")) }
            if rotate { body["rotate"] = .bool(true) }
            let parsed: WebPushSettings
            do {
                parsed = try WebPushSettingsInput.parse(.object(body))
            } catch let error as APIError {
                throw commandLineError(error)
            }
            let appID = app
            let saved = try await withStores(audit: CommandAudit("apps set-webpush", appID: appID)) { stores -> WebPushSettings? in
                let settings = WebPushSettingsInput.completed(parsed, previous: try await stores.gateways.webpush.settings(appID: appID))
                return try await stores.gateways.webpush.save(settings, appID: appID) ? settings : nil
            }
            guard let saved else { throw CommandFailure("There is no app \(appID).") }
            print("App \(appID) sends to browsers as \(saved.subject). Browsers subscribe with this public key (applicationServerKey):")
            print(saved.publicKey)
        }
    }

    struct RemoveWebPush: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-webpush", abstract: "Remove an app's Web Push key (browsers subscribed with it can no longer be reached).")
        @Option(help: "The app's id.") var app: Int64
        func run() async throws { try await removeGatewaySettings(.webpush, appID: app) }
    }
}

/// `apps remove-apns|remove-fcm|remove-webpush`.
func removeGatewaySettings(_ provider: Provider, appID: Int64) async throws {
    let removed = try await withStores(audit: CommandAudit("apps remove-\(provider.rawValue)", appID: appID)) {
        try await $0.gateways.remove(provider, appID: appID)
    }
    guard removed else { throw CommandFailure("App \(appID) has no \(provider.displayName) settings.") }
    print("Removed app \(appID)'s \(provider.displayName) settings.")
}

func readFile(_ path: String, option: String) throws -> String {
    do {
        return try String(contentsOfFile: path, encoding: .utf8)
    } catch {
        throw CommandFailure("\(option): cannot read \(path): \(error.localizedDescription)")
    }
}
