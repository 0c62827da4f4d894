import ArgumentParser
import Foundation
import NotifiableApp
import NotifiableStore

struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read the audit log: every state-changing action of the console, the admin API and the command line.",
        subcommands: [Export.self]
    )

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the audit log as JSON lines, oldest first.")

        @Option(help: "Only entries at or after this time (ISO 8601, e.g. 2026-11-01T00:00:00Z).") var since: String?
        @Option(help: "Only this app's entries.") var app: Int64?

        func validate() throws {
            if let since, (try? Date(since, strategy: .iso8601)) == nil {
                throw ValidationError("--since must be an ISO 8601 time such as 2026-11-01T00:00:00Z.")
            }
        }

        func run() async throws {
            let since = try since.map { try Date($0, strategy: .iso8601) }, appID = app
            try await withStores { stores in
                try await stores.audit.export(since: since, appID: appID) { print($0.jsonLine()) }
            }
        }
    }
}
