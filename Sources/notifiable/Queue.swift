import ArgumentParser
import Foundation
import Logging
import NotifiableApp
import NotifiableStore

struct Queue: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Look at the delivery queue and re-queue dead deliveries, as /admin/queue and /admin/deliveries/dead do.",
        subcommands: [Status.self, RequeueDead.self]
    )

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deliveries by state, the oldest ready delivery's wait and notifications still fanning out, as JSON."
        )

        func run() async throws {
            let stats = try await withStores { stores in
                try await QueueAdminStore(client: stores.client, logger: Logger(label: "notifiable.queue")).stats()
            }
            print(AdminJSON.queue(stats))
        }
    }

    struct RequeueDead: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put dead deliveries back in the queue with a fresh attempt budget (those to devices gone or notifications expired stay dead)."
        )

        @Option(help: "Only this app's dead deliveries.") var app: Int64?

        func run() async throws {
            let appID = app
            let count = try await withStores(audit: CommandAudit("queue requeue-dead", appID: appID)) { stores in
                try await QueueAdminStore(client: stores.client, logger: Logger(label: "notifiable.queue")).requeueDead(appID: appID, ids: nil)
            }
            print("Re-queued \(count) dead deliveries.")
        }
    }
}
