import ArgumentParser
import Foundation
import Logging
import NotifiableApp
import NotifiableCore
import NotifiableStore

extension Apps {
    /// The admin API's webhook routes, for operators at a shell.
    struct Webhooks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Manage an app's webhooks for delivery events.",
            subcommands: [Add.self, List.self, Resume.self, Remove.self, Batches.self]
        )

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Register a webhook and print its signing secret (shown once).")

            @Option(help: "The app's id.") var app: Int64
            @Option(help: "Where to POST events: an http:// or https:// URL.") var url: String
            @Option(
                name: .customLong("event"),
                help: "An event type to send (repeat it); all when none: \(WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")).")
            var events: [String] = []
            @Flag(help: "Print exactly one JSON object, as POST /admin/apps/:id/webhooks answers.") var json = false

            func run() async throws {
                let (id, url, eventNames) = (app, url, events.isEmpty ? nil : events)
                // Said before the database is opened, so a mistyped flag is answered at once.
                do {
                    _ = try WebhookSubscription(url: url, eventNames: eventNames)
                } catch {
                    throw ArgumentParser.ValidationError("\(error.field?.hasPrefix("events") == true ? "--event" : "--url"): \(error.message)")
                }
                let configuration = try ServerConfiguration.fromEnvironment(ProcessInfo.processInfo.environment)
                let added: (webhook: Webhook, secret: String)?
                do {
                    added = try await withStores(audit: CommandAudit("apps webhooks add", appID: id)) { stores in
                        do {
                            return try await WebhookAdministration(webhooks: stores.webhooks, targets: configuration.webhooks.targets).add(
                                appID: id, url: url, eventNames: eventNames)
                        } catch WebhookAdministration.Refusal.noSuchApp {
                            return nil
                        }
                    }
                } catch WebhookAdministration.Refusal.internalTarget(let refusal) {
                    throw ArgumentParser.ValidationError("--url: \(refusal).")
                }
                guard let (webhook, secret) = added else { throw CommandFailure("There is no app \(id).") }
                print(
                    json
                        ? AdminJSON.webhook(webhook, secret: secret)
                        : "Webhook \(webhook.id) sends \(webhook.events.map(\.rawValue).joined(separator: ", ")) to \(webhook.url).\nSigning secret (shown only now): \(secret)"
                )
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List an app's webhooks as JSON (never their secrets).")

            @Option(help: "The app's id.") var app: Int64

            func run() async throws {
                let id = app
                guard let webhooks = try await withStores({ try await $0.webhooks.list(appID: id) }) else {
                    throw CommandFailure("There is no app \(id).")
                }
                print(AdminJSON.webhooks(webhooks))
            }
        }

        struct Resume: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Resume a paused webhook: its waiting batch goes now, then the backlog.")

            @Option(help: "The app's id.") var app: Int64
            @Option(help: "The webhook's id.") var webhook: Int64

            func run() async throws {
                let (appID, id) = (app, webhook)
                guard
                    let resumed = try await withStores(
                        audit: CommandAudit("apps webhooks resume", appID: appID), { try await $0.webhooks.resume(appID: appID, id: id) })
                else {
                    throw CommandFailure("App \(appID) has no webhook \(id).")
                }
                print(AdminJSON.webhook(resumed, secret: nil))
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Delete a webhook with the events it has not sent.")

            @Option(help: "The app's id.") var app: Int64
            @Option(help: "The webhook's id.") var webhook: Int64

            func run() async throws {
                let (appID, id) = (app, webhook)
                guard try await withStores(audit: CommandAudit("apps webhooks remove", appID: appID), { try await $0.webhooks.delete(appID: appID, id: id) })
                else {
                    throw CommandFailure("App \(appID) has no webhook \(id).")
                }
                print("Deleted webhook \(id).")
            }
        }

        struct Batches: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "A webhook's latest batches with their attempts, last status and error, as JSON.")

            @Option(help: "The app's id.") var app: Int64
            @Option(help: "The webhook's id.") var webhook: Int64
            @Option(help: "How many, newest first (1 to 1000).") var limit = 20

            func validate() throws {
                guard (1...1000).contains(limit) else { throw ArgumentParser.ValidationError("--limit: must be 1 to 1000.") }
            }

            func run() async throws {
                let (appID, id, limit) = (app, webhook, limit)
                guard let batches = try await withStores({ try await $0.webhooks.batches(appID: appID, webhookID: id, beforeID: nil, limit: limit) }) else {
                    throw CommandFailure("App \(appID) has no webhook \(id).")
                }
                print(AdminJSON.webhookBatches(batches))
            }
        }
    }
}

extension Stores {
    var webhooks: WebhookStore { WebhookStore(client: client, keys: configuration.keys, logger: Logger(label: "notifiable")) }
}
