import ArgumentParser
import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import PostgresNIO

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
            let options = ImportRun(
                appID: app, file: file, format: file.flatMap { format ?? DeviceFileFormat(fileName: $0) },
                railsURL: railsURL, railsAppID: railsAppID,
                stateURL: URL(fileURLWithPath: stateFile ?? file.map { "\($0).import-state" } ?? "notifiable-rails-import-\(app).import-state"),
                restart: restart, batchSize: batchSize, stopAfterBatches: stopAfterBatches, crashBeforeCheckpoint: crashBeforeCheckpoint
            )
            try await withStores { stores in try await options.run(stores) }
        }
    }
}

/// One run of `devices import`, from the parsed options.
struct ImportRun: Sendable {
    let appID: Int64
    let file: String?
    let format: DeviceFileFormat?
    let railsURL: String?
    let railsAppID: Int64?
    let stateURL: URL
    let restart: Bool
    let batchSize: Int
    let stopAfterBatches: Int?
    let crashBeforeCheckpoint: Bool

    /// Names the source in the checkpoint, so a checkpoint is never applied to another import.
    var sourceName: String {
        if let file { return "file:\(URL(fileURLWithPath: file).standardizedFileURL.path)" }
        return "notifiable-rails:\(railsAppID.map(String.init) ?? "all")"
    }

    func run(_ stores: Stores) async throws {
        guard try await stores.apps.app(id: appID) != nil else { throw CommandFailure("There is no app \(appID).") }
        let logger = { var logger = Logger(label: "notifiable.import"); logger.logLevel = .notice; return logger }()
        let importer = DeviceImport(client: stores.client, logger: logger)

        var checkpoint = ImportCheckpoint(source: sourceName, appID: appID)
        if !restart, let saved = try ImportCheckpoint.load(stateURL) {
            guard saved.source == sourceName, saved.appID == appID else {
                throw CommandFailure("The checkpoint \(stateURL.path) belongs to another import (\(saved.source), app \(saved.appID)); pass --restart or --state-file.")
            }
            checkpoint = saved
            if let flight = saved.inFlight {
                // Did the batch the last run was committing make it? Its rows carry its timestamp.
                if try await importer.committed(appID: appID, at: flight.at) {
                    checkpoint.position = flight.position
                    checkpoint.summary = flight.summary
                    checkpoint.batches = flight.batches
                }
                checkpoint.inFlight = nil
            }
            FileHandle.standardError.write(Data("Resuming after \(checkpoint.summary.rowsRead) rows (\(checkpoint.batches) batches) from \(stateURL.path).\n".utf8))
        }

        if let file, let format {
            var source = try FileImportSource(url: URL(fileURLWithPath: file), format: format, from: checkpoint.position)
            try await importAll(from: &source, importer: importer, checkpoint: checkpoint, place: "lines")
        } else if let railsURL {
            let checkpoint = checkpoint
            try await withPostgresClient(try DatabaseURL.configuration(from: railsURL), logger: logger) { rails in
                let devices = try await NotifiableRailsDevices.open(client: rails, railsAppID: railsAppID, logger: logger)
                var source = try await RailsImportSource(devices: devices, from: checkpoint.position)
                try await importAll(from: &source, importer: importer, checkpoint: checkpoint, place: "ids")
            }
        }
    }

    /// Reads, validates and writes batch after batch; the next batch is read and validated while
    /// the database writes the current one.
    private func importAll(
        from source: inout some DeviceImportSource, importer: DeviceImport, checkpoint start: ImportCheckpoint, place: String
    ) async throws {
        var checkpoint = start
        var progress = ImportProgress(total: source.total, done: source.done(at: checkpoint.position, rowsThisRun: 0))
        let started = Date()
        var rowsThisRun = 0
        var next = try await source.next(limit: batchSize)
        while let batch = next {
            let devices = DeviceImport.lastPerToken(batch.devices)
            var summary = checkpoint.summary
            summary.rowsRead += batch.rowsRead
            summary.superseded += batch.devices.count - devices.count
            for (error, line) in batch.rejected { summary.reject(error, at: line) }
            let (before, stateURL, appID) = (checkpoint, self.stateURL, self.appID)
            let pending = summary

            async let written = importer.write(appID: appID, devices: devices) { counts, at in
                var flight = pending
                flight.written = flight.written + counts
                var saved = before
                saved.inFlight = .init(at: at, position: batch.end, summary: flight, batches: before.batches + 1)
                try saved.save(stateURL)
            }
            let following = try await source.next(limit: batchSize)
            summary.written = summary.written + (try await written)
            next = following

            checkpoint.position = batch.end
            checkpoint.summary = summary
            checkpoint.batches += 1
            checkpoint.seconds = start.seconds + Date().timeIntervalSince(started)
            checkpoint.inFlight = nil
            rowsThisRun += batch.rowsRead
            if checkpoint.batches == stopAfterBatches, crashBeforeCheckpoint { exit(75) }  // test hook: die mid-checkpoint
            try checkpoint.save(stateURL)
            progress.update(
                done: source.done(at: checkpoint.position, rowsThisRun: rowsThisRun), rows: checkpoint.summary.rowsRead, rowsThisRun: rowsThisRun
            )
            if checkpoint.batches == stopAfterBatches {
                FileHandle.standardError.write(Data("Stopped after \(checkpoint.batches) batches; run again to resume.\n".utf8))
                throw ExitCode(75)
            }
        }
        progress.update(done: source.total, rows: checkpoint.summary.rowsRead, rowsThisRun: rowsThisRun, final: true)
        try? FileManager.default.removeItem(at: stateURL)
        print(checkpoint.summary.text(seconds: checkpoint.seconds, place: place))
    }
}
