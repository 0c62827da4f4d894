import ArgumentParser
import Foundation
import NotifiableTransfer

extension Devices {
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register devices in bulk from a CSV or JSON-lines file, or from a notifiable-rails database.",
            discussion: """
                Rows follow the rules of POST /api/v1/device_tokens: a token the app has (in any case) is \
                updated and moves to the row's user_alias, a row without user_alias anonymises it, \
                language and country are stored lower-case, invalid rows are reported and skipped.
                CSV: a header row naming token, provider and any of user_alias, language, country, \
                custom_properties (a JSON object's text), name. JSON lines: one object per line, the same keys.
                Rows are written in batches, each in its own transaction; an interrupted import resumes \
                from its checkpoint (FILE.import-state) when run again.
                """
        )

        @Option(help: "The app's id.") var app: Int64
        @Argument(help: "A .csv, .jsonl or .ndjson file.") var file: String?
        @Option(help: "The file's format when its extension does not say.") var format: DeviceFileFormat?
        @Option(name: .customLong("from-notifiable-rails"), help: "Read notifiable_device_tokens from this notifiable-rails database URL instead of a file.")
        var railsURL: String?
        @Option(name: .customLong("rails-app-id"), help: "With --from-notifiable-rails: only this notifiable-rails app's tokens.")
        var railsAppID: Int64?
        @Option(help: "The checkpoint file (default: FILE.import-state, or notifiable-rails-import-APP.import-state).")
        var stateFile: String?
        @Flag(help: "Ignore an earlier run's checkpoint and start from the beginning.") var restart = false
        @Option(help: "Rows per statement and transaction.") var batchSize = 1000
        @Option(help: .hidden) var stopAfterBatches: Int?
        @Flag(help: .hidden) var crashBeforeCheckpoint = false

        func validate() throws {
            guard (file == nil) != (railsURL == nil) else { throw ValidationError("Give a FILE or --from-notifiable-rails URL (one of them).") }
            if let file, format == nil, DeviceFileFormat(fileName: file) == nil {
                throw ValidationError("Cannot tell the format of \(file) from its extension; pass --format csv or --format jsonl.")
            }
            guard (1...10_000).contains(batchSize) else { throw ValidationError("--batch-size must be 1 to 10000.") }
            if railsAppID != nil, railsURL == nil { throw ValidationError("--rails-app-id goes with --from-notifiable-rails.") }
        }

        func run() async throws {
            let run = DeviceImportRun(
                appID: app, file: file, format: file.flatMap { format ?? DeviceFileFormat(fileName: $0) },
                railsURL: railsURL, railsAppID: railsAppID,
                stateURL: URL(fileURLWithPath: stateFile ?? file.map { "\($0).import-state" } ?? "notifiable-rails-import-\(app).import-state"),
                restart: restart, batchSize: batchSize, stopAfterBatches: stopAfterBatches, crashBeforeCheckpoint: crashBeforeCheckpoint
            )
            switch try await withStores(
                audit: CommandAudit("devices import", appID: app), { stores in try await run.run(client: stores.client, apps: stores.apps) })
            {
            case .finished(let report):
                print(report)
            case .stopped(let batches):
                FileHandle.standardError.write(Data("Stopped after \(batches) batches; run again to resume.\n".utf8))
                throw ExitCode(75)
            }
        }
    }
}
