import ArgumentParser
import Foundation
import Logging
import NotifiableApp
import NotifiableCore
import NotifiableDelivery
import NotifiableStore

struct Notifications: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send notifications from the command line, as POST /api/v1/notifications does.",
        subcommands: [Send.self]
    )

    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store a notification for delivery and wake the workers; prints it as the API answers.",
            discussion: """
                Either a whole request body (--file, the JSON of POST /api/v1/notifications) or the common \
                fields as options. Examples:
                  notifiable notifications send --app 1 --title Hello --message "Your order shipped" --user alice
                  notifiable notifications send --app 1 --message "Maintenance tonight" --all
                  notifiable notifications send --app 1 --file notification.json
                """
        )

        @Option(help: "The app's id.") var app: Int64
        @Option(help: "A JSON file holding the request body.") var file: String?
        @Option(help: "The title.") var title: String?
        @Option(help: "The message.") var message: String?
        @Option(name: .customLong("user"), help: "A user alias to reach (repeatable).") var users: [String] = []
        @Option(name: .customLong("device-id"), help: "A device id to reach (repeatable).") var deviceIDs: [Int64] = []
        @Flag(help: "Reach every device of the app.") var all = false
        @Option(help: "Reach the devices whose tags match, such as \"(group:beta || vip) && !lang:fr\".") var tagExpression: String?
        @Flag(help: "Keep a copy per user (with --user) whose read and action state the user's devices share.") var stateful = false
        @Option(help: "Makes a repeated command send nothing twice.") var idempotencyKey: String?

        func validate() throws {
            let hasFields = title != nil || message != nil || !users.isEmpty || !deviceIDs.isEmpty || all || idempotencyKey != nil
            guard (file == nil) != !hasFields else {
                throw ValidationError("Give --file, or the notification's fields (--title, --message, --user, --device-id, --all), not both.")
            }
        }

        /// The request body the options stand for.
        func body() throws -> JSONValue {
            if let file {
                guard let data = FileManager.default.contents(atPath: file) else { throw CommandFailure("Cannot read \(file).") }
                guard let body = try? JSONValue.decode(data) else { throw CommandFailure("\(file) is not valid JSON.") }
                return body
            }
            var object: [String: JSONValue] = [:]
            if let title { object["title"] = .string(title) }
            if let message { object["message"] = .string(message) }
            if !users.isEmpty { object["user_aliases"] = .array(users.map(JSONValue.string)) }
            if !deviceIDs.isEmpty { object["device_ids"] = .array(deviceIDs.map(JSONValue.integer)) }
            if all { object["all"] = .bool(true) }
            if let tagExpression { object["tag_expression"] = .string(tagExpression) }
            if stateful { object["stateful"] = .bool(true) }
            if let idempotencyKey { object["idempotency_key"] = .string(idempotencyKey) }
            return .object(object)
        }

        /// The request the options stand for, validated, and its body's digest for the idempotency key.
        func parsed() throws -> (NotificationRequest, [UInt8]) {
            let body = try body()
            do {
                return (try NotificationRequest.accepted(body, now: Date()), NotificationRequest.digest(of: body))
            } catch {
                throw ValidationError("\(error.field.map { "\($0): " } ?? "")\(error.message)")
            }
        }

        func run() async throws {
            let (request, digest) = try parsed()
            let appID = app
            let text = try await withStores(audit: CommandAudit("notifications send", appID: appID)) { stores -> String in
                guard try await stores.apps.app(id: appID) != nil else { throw CommandFailure("There is no app \(appID).") }
                let notifications = NotificationStore(client: stores.client, logger: Logger(label: "notifiable.notifications"))
                // The store wakes the workers (NOTIFY) once the notification is committed.
                let (notification, created) = try await notifications.create(
                    appID: appID, request: request, digest: digest
                )
                let counters = created ? nil : try await notifications.counters(notificationID: notification.id)
                return AdminJSON.notification(notification, counters: counters)
            }
            print(text)
        }
    }
}
