import ArgumentParser
import Foundation
import Logging
import NotifiableApp
import NotifiableCore
import NotifiableStore
import PostgresNIO

struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage apps (tenants), their credentials and their gateway settings (APNs, FCM, Web Push).",
        subcommands: [
            Create.self, List.self, Show.self, Update.self, Delete.self, RotateCredentials.self, RevokeCredential.self,
            RotateUserTokenKey.self, SetAPNs.self, RemoveAPNs.self, SetFCM.self, RemoveFCM.self, SetWebPush.self, RemoveWebPush.self,
            Webhooks.self,
        ]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an app and print its credentials (shown once).")

        @Option(help: "The app's name.") var name: String
        @Flag(help: "Deliver to the built-in fake gateways instead of Apple and Google, recording every push.") var sandbox = false
        @Flag(help: "Print exactly one JSON object.") var json = false

        func validate() throws {
            guard App.normalizedName(name) != nil else { throw ValidationError("--name must be 1 to \(App.maxNameLength) characters.") }
        }

        func run() async throws {
            let name = App.normalizedName(name)!, mode: DeliveryMode = sandbox ? .sandbox : .live
            let created = try await withStores(audit: CommandAudit("apps create")) { try await $0.apps.create(name: name, deliveryMode: mode) }
            print(json ? CreatedAppJSON(created).jsonText() : CreatedAppJSON(created).humanText())
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List apps: id, name, delivery mode, creation time.")

        func run() async throws {
            let apps = try await withStores { try await $0.apps.list() }
            for app in apps { print("\(app.id)\t\(app.name)\t\(app.deliveryMode.rawValue)\t\(app.createdAt.formatted(.iso8601))") }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show an app with its credentials' access ids and its gateway settings (secrets redacted), as JSON.")

        @Option(help: "The app's id.") var app: Int64

        func run() async throws {
            let id = app
            let text = try await withStores { stores -> String? in
                guard let app = try await stores.apps.app(id: id), let policy = try await stores.userTokens.policy(appID: id) else { return nil }
                return AdminJSON.app(
                    app, policy: policy, credentials: try await stores.apps.credentials(appID: id),
                    gateways: try await stores.gateways.summaries(appID: id)
                )
            }
            guard let text else { throw CommandFailure("There is no app \(id).") }
            print(text)
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rename an app, switch its delivery mode, require verified user aliases or change its push defaults."
        )

        @Option(help: "The app's id.") var app: Int64
        @Option(help: "A new name.") var name: String?
        @Option(help: "live (Apple and Google) or sandbox (the built-in fake gateways).") var mode: DeliveryMode?
        @Option(help: "true: a device takes a user alias only with that user's token (see README, Security).")
        var requireVerifiedAlias: Bool?
        @Option(help: "data (data-only FCM messages the Notifiable Android SDK builds and reports) or notification (Android draws them).")
        var androidStyle: AndroidStyle?
        @Option(
            name: .customLong("default-ttl-seconds"),
            help:
                "Seconds a notification without ttl_seconds or expires_at waits for an offline device (\(PushDefaults.timeToLiveRange.lowerBound) to \(PushDefaults.timeToLiveRange.upperBound))."
        )
        var defaultTTLSeconds: Int64?
        @Option(help: "true: notifications that show an alert carry mutable-content unless they say otherwise.")
        var defaultMutableContent: Bool?
        @Option(help: "true: notifications carry content-available unless they say otherwise.")
        var defaultContentAvailable: Bool?
        @Option(help: "Days to keep the app's data, fewer than NOTIFIABLE_RETENTION_DAYS; default: the service's period again.")
        var retentionDays: String?
        @Option(help: "The Android notification channel of notifications that name none; none removes it.")
        var defaultAndroidChannelId: String?

        /// `--default-android-channel-id`: nil when not given, `.some(nil)` for "none".
        var androidChannel: String?? {
            guard let defaultAndroidChannelId else { return nil }
            return defaultAndroidChannelId == "none" || defaultAndroidChannelId.isEmpty ? .some(nil) : .some(defaultAndroidChannelId)
        }

        /// `--retention-days`: nil when not given, `.some(nil)` for "default".
        var retention: Int?? {
            guard let retentionDays else { return nil }
            return retentionDays == "default" ? .some(nil) : Int(retentionDays).map { .some($0) }
        }

        var changes: AppStore.Changes {
            AppStore.Changes(
                name: name.flatMap(App.normalizedName), deliveryMode: mode, androidStyle: androidStyle, timeToLiveSeconds: defaultTTLSeconds,
                mutableContent: defaultMutableContent, contentAvailable: defaultContentAvailable, retentionDays: retention,
                androidChannelID: androidChannel
            )
        }

        func validate() throws {
            if let name, App.normalizedName(name) == nil { throw ValidationError("--name must be 1 to \(App.maxNameLength) characters.") }
            if let defaultTTLSeconds, !PushDefaults.timeToLiveRange.contains(defaultTTLSeconds) {
                throw ValidationError(
                    "--default-ttl-seconds must be from \(PushDefaults.timeToLiveRange.lowerBound) to \(PushDefaults.timeToLiveRange.upperBound)."
                )
            }
            if let retentionDays, retentionDays != "default", Int(retentionDays).map({ !(1...3650).contains($0) }) ?? true {
                throw ValidationError("--retention-days must be a number of days from 1 to 3650, or default.")
            }
            if let channel = androidChannel ?? nil, channel.unicodeScalars.count > 255 || channel.unicodeScalars.contains(where: { $0.value < 0x20 }) {
                throw ValidationError("--default-android-channel-id is at most 255 characters, without control characters.")
            }
            guard changes != AppStore.Changes() || requireVerifiedAlias != nil else {
                throw ValidationError(
                    "Give --name, --mode, --require-verified-alias, --android-style, --default-ttl-seconds, --default-mutable-content, "
                        + "--default-content-available, --retention-days, --default-android-channel-id or several."
                )
            }
        }

        func run() async throws {
            let id = app, changes = changes, required = requireVerifiedAlias
            let result = try await withStores(audit: CommandAudit("apps update", appID: id)) { stores -> (App, UserTokenPolicy)? in
                if case let days?? = changes.retentionDays, days > stores.configuration.retentionDays {
                    throw CommandFailure(
                        "--retention-days may shorten NOTIFIABLE_RETENTION_DAYS (\(stores.configuration.retentionDays)), not lengthen it: "
                            + "whole days of deliveries are dropped for every app at once.")
                }
                let policy =
                    if let required {
                        try await stores.userTokens.setRequireVerifiedAlias(required, appID: id)
                    } else {
                        try await stores.userTokens.policy(appID: id)
                    }
                guard let policy, let app = try await stores.apps.update(id: id, changes) else { return nil }
                return (app, policy)
            }
            guard let result else { throw CommandFailure("There is no app \(id).") }
            let (updated, policy) = result
            let defaults = updated.pushDefaults
            print("App \(updated.id) \"\(updated.name)\" delivers in \(updated.deliveryMode.rawValue) mode.")
            print(
                policy.requireVerifiedAlias
                    ? "Devices take a user alias only with that user's token."
                    : "Devices may take any user alias (verified aliases are not required).")
            print(
                "Android style \(defaults.androidStyle.rawValue); default time to live \(defaults.timeToLiveSeconds) s; "
                    + "mutable-content \(defaults.mutableContent ? "on" : "off") and content-available \(defaults.contentAvailable ? "on" : "off") by default.")
            print(
                defaults.androidChannelID.map { "Android notifications without a channel go to \"\($0)\"." }
                    ?? "Android notifications without a channel go to the app's default channel.")
            print(updated.retentionDays.map { "Its data is kept \($0) days." } ?? "Its data is kept for the service's retention period.")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete an app with its devices, notifications, deliveries, credentials and settings.")

        @Option(help: "The app's id.") var app: Int64
        @Flag(help: "Confirm: this cannot be undone.") var yes = false

        func run() async throws {
            guard yes else { throw ValidationError("Deleting app \(app) removes all its data for good; add --yes to confirm.") }
            let id = app
            guard try await withStores(audit: CommandAudit("apps delete", appID: id), { try await $0.apps.delete(id: id) }) else {
                throw CommandFailure("There is no app \(id).")
            }
            print("Deleted app \(id).")
        }
    }
}

extension DeliveryMode: ExpressibleByArgument {}
extension AndroidStyle: ExpressibleByArgument {}
extension CredentialRole: ExpressibleByArgument {}

/// The stores a CLI command works with, over the configured database.
struct Stores: Sendable {
    let apps: AppStore
    let gateways: GatewaySettingsStores
    let userTokens: UserTokenSettingsStore
    let audit: AuditLogStore
    let client: Database
    let configuration: ServerConfiguration
    let logger: Logger
}

/// What a state-changing command writes to the audit log: the command's words and its app.
struct CommandAudit: Sendable {
    let action: String
    let appID: Int64?
    /// What the command changed, beside its name (the operator and role it set, say).
    let detail: [String: String]?

    init(_ action: String, appID: Int64? = nil, detail: [String: String]? = nil) {
        self.action = action
        self.appID = appID
        self.detail = detail
    }

    /// The command line's user, as the audit log names them.
    static var actor: String {
        let environment = ProcessInfo.processInfo.environment
        return "cli:" + (environment["SUDO_USER"] ?? environment["USER"] ?? environment["LOGNAME"] ?? "uid\(getuid())")
    }

    func entry(status: Int, appID created: Int64? = nil) -> AuditEntry {
        AuditEntry(
            actor: Self.actor, channel: .cli, action: action, appID: appID ?? created, origin: ProcessInfo.processInfo.hostName, status: status,
            detail: detail)
    }
}

/// A command's result that says whether it found what it was to change (nil or false: it did not).
protocol AuditedResult {
    var auditSucceeded: Bool { get }
}

extension Optional: AuditedResult {
    var auditSucceeded: Bool { self != nil }
}

extension Bool: AuditedResult {
    var auditSucceeded: Bool { self }
}

/// Runs `body` with the stores of the configured database, migrated first so that a fresh
/// database works without a separate `notifiable migrate`.
/// With `audit`, the command is written to the audit log once it has run: status 0 when it did
/// what it was asked, 1 when it found nothing to change or failed.
func withStores<T: Sendable>(audit: CommandAudit? = nil, _ body: @Sendable (Stores) async throws -> T) async throws -> T {
    let configuration = try ServerConfiguration.fromEnvironment(ProcessInfo.processInfo.environment)
    let logger = bootstrapLogging(level: .notice)
    return try await withDatabase(url: configuration.databaseURL, connectTimeout: .seconds(5), logger: logger) { client in
        // A command waits a few seconds for the database, not the pool's minute of retries.
        do {
            try await withDeadline(.seconds(8)) { for try await _ in try await client.query("SELECT 1", logger: logger) {} }
        } catch {
            throw CommandFailure(
                "Cannot reach the database at \(DatabaseURL.redacted(configuration.databaseURL)) (DATABASE_URL): "
                    + (error is DeadlineExceeded ? "no answer within 8 s" : databaseErrorText(error))
                    + ". Check that PostgreSQL runs there and that DATABASE_URL names it."
            )
        }
        try await migrate(configuration, postgres: client, logger: logger)
        let stores = Stores(
            apps: AppStore(client: client, keys: configuration.keys, logger: logger),
            gateways: GatewaySettingsStores(client: client, keys: configuration.keys, logger: logger),
            userTokens: UserTokenSettingsStore(client: client, logger: logger),
            audit: AuditLogStore(client: client, logger: logger),
            client: client, configuration: configuration, logger: logger
        )
        guard let audit else { return try await body(stores) }
        let result: T
        do {
            result = try await body(stores)
        } catch {
            try? await stores.audit.record(audit.entry(status: 1))
            throw error
        }
        // What was done is done (and a secret shown once must still be printed): an audit log that
        // cannot be written is reported, not turned into the command's failure.
        do {
            try await stores.audit.record(
                audit.entry(status: (result as? any AuditedResult)?.auditSucceeded == false ? 1 : 0, appID: (result as? AppStore.CreatedApp)?.app.id))
        } catch {
            FileHandle.standardError.write(Data("warning: the audit log could not be written: \(databaseErrorText(error))\n".utf8))
        }
        return result
    }
}

/// An `APIError` from a shared input parser, said the way a command-line user needs it.
func commandLineError(_ error: APIError) -> ArgumentParser.ValidationError {
    ArgumentParser.ValidationError("\(error.field.map { "--\($0.replacingOccurrences(of: "_", with: "-")): " } ?? "")\(error.message)")
}
