import ArgumentParser
import Foundation
import NotifiableTransfer

extension Devices {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write an app's reachable devices as CSV or JSON lines, in the shape devices import reads.",
            discussion: "Devices that were unregistered, merged away or whose token a gateway reported dead are left out."
        )

        @Option(help: "The app's id.") var app: Int64
        @Option(help: "csv or jsonl (default: from --output's extension, else csv).") var format: DeviceFileFormat?
        @Option(help: "Write here instead of standard output.") var output: String?
        @Option(help: .hidden) var pageSize = 5000

        func run() async throws {
            let run = DeviceExportRun(
                appID: app, format: format ?? output.flatMap(DeviceFileFormat.init(fileName:)) ?? .csv, output: output, pageSize: pageSize
            )
            let count = try await withStores { stores in try await run.run(client: stores.client, apps: stores.apps) }
            FileHandle.standardError.write(Data("Exported \(count) devices.\n".utf8))
        }
    }
}
