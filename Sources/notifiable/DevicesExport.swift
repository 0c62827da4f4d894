import ArgumentParser
import Foundation
import NotifiableApp
import NotifiableStore
import NotifiableTransfer

extension Devices {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write an app's reachable devices as CSV or JSON lines, in the shape devices import reads.",
            discussion: """
                Devices that were unregistered, merged away or whose token a gateway reported dead are left out. \
                With NOTIFIABLE_READ_DATABASE_URL set, the devices are read there (a standby).
                """
        )

        @Option(help: "The app's id.") var app: Int64
        @Option(help: "csv or jsonl (default: from --output's extension, else csv).") var format: DeviceFileFormat?
        @Option(help: "Write here instead of standard output.") var output: String?
        @Option(help: .hidden) var pageSize = 5000

        func run() async throws {
            let run = DeviceExportRun(
                appID: app, format: format ?? output.flatMap(DeviceFileFormat.init(fileName:)) ?? .csv, output: output, pageSize: pageSize
            )
            // An export reads every device of an app: from the read pool when there is one.
            let count = try await withStores { stores in
                guard let readURL = stores.configuration.readDatabaseURL else { return try await run.run(client: stores.client, apps: stores.apps) }
                return try await withDatabase(url: readURL, connectTimeout: .seconds(5), logger: stores.apps.logger) { reads in
                    try await run.run(client: reads, apps: AppStore(client: reads, keys: stores.configuration.keys, logger: stores.apps.logger))
                }
            }
            FileHandle.standardError.write(Data("Exported \(count) devices.\n".utf8))
        }
    }
}
