import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import PostgresNIO

/// One run of `devices import`, from the parsed options.
public struct DeviceImportRun: Sendable {
    /// How a run ended.
    public enum Outcome: Sendable, Equatable {
        /// Every row was read; the report to print.
        case finished(report: String)
        /// Stopped on purpose after this many batches (a test of resuming); the checkpoint is kept.
        case stopped(batches: Int)
    }

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

    /// - Parameters:
    ///   - file: the file to read, with its `format`; or nil, with `railsURL`, to read notifiable-rails' devices.
    ///   - stopAfterBatches: a test hook: stop after this many batches; with `crashBeforeCheckpoint`, die
    ///     (exit 75) after committing the last one and before recording it in the checkpoint.
    public init(
        appID: Int64, file: String?, format: DeviceFileFormat?, railsURL: String?, railsAppID: Int64?, stateURL: URL,
        restart: Bool, batchSize: Int, stopAfterBatches: Int? = nil, crashBeforeCheckpoint: Bool = false
    ) {
        self.appID = appID
        self.file = file
        self.format = format
        self.railsURL = railsURL
        self.railsAppID = railsAppID
        self.stateURL = stateURL
        self.restart = restart
        self.batchSize = batchSize
        self.stopAfterBatches = stopAfterBatches
        self.crashBeforeCheckpoint = crashBeforeCheckpoint
    }

    /// Names the source in the checkpoint, so a checkpoint is never applied to another import.
    var sourceName: String {
        if let file { return "file:\(URL(fileURLWithPath: file).standardizedFileURL.path)" }
        return "notifiable-rails:\(railsAppID.map(String.init) ?? "all")"
    }

    public func run(client: Database, apps: AppStore) async throws -> Outcome {
        guard try await apps.app(id: appID) != nil else { throw DeviceTransferFailure("There is no app \(appID).") }
        let logger = {
            var logger = Logger(label: "notifiable.import")
            logger.logLevel = .notice
            return logger
        }()
        let importer = DeviceImportStore(client: client, logger: logger)

        var checkpoint = ImportCheckpoint(source: sourceName, appID: appID)
        if !restart, let saved = try ImportCheckpoint.load(stateURL) {
            guard saved.source == sourceName, saved.appID == appID else {
                throw DeviceTransferFailure(
                    "The checkpoint \(stateURL.path) belongs to another import (\(saved.source), app \(saved.appID)); pass --restart or --state-file.")
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
            FileHandle.standardError.write(
                Data("Resuming after \(checkpoint.summary.rowsRead) rows (\(checkpoint.batches) batches) from \(stateURL.path).\n".utf8))
        }

        if let file, let format {
            var source = try FileImportSource(url: URL(fileURLWithPath: file), format: format, from: checkpoint.position)
            return try await importAll(from: &source, importer: importer, checkpoint: checkpoint, place: "lines")
        }
        guard let railsURL else { throw DeviceTransferFailure("Give a file with its format, or a notifiable-rails database URL.") }
        let start = checkpoint
        return try await withPostgresClient(try DatabaseURL.configuration(from: railsURL), logger: logger) { rails in
            let devices = try await NotifiableRailsDeviceStore.open(client: rails, railsAppID: railsAppID, logger: logger)
            var source = try await RailsImportSource(devices: devices, from: start.position)
            return try await importAll(from: &source, importer: importer, checkpoint: start, place: "ids")
        }
    }

    /// Reads, validates and writes batch after batch; the next batch is read and validated while
    /// the database writes the current one.
    private func importAll(
        from source: inout some DeviceImportSource, importer: DeviceImportStore, checkpoint start: ImportCheckpoint, place: String
    ) async throws -> Outcome {
        var checkpoint = start
        var progress = ImportProgress(total: source.total, done: source.done(at: checkpoint.position, rowsThisRun: 0))
        let started = Date()
        var rowsThisRun = 0
        var next = try await source.next(limit: batchSize)
        while let batch = next {
            let devices = DeviceImportStore.lastPerToken(batch.devices)
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
                return .stopped(batches: checkpoint.batches)
            }
        }
        progress.update(done: source.total, rows: checkpoint.summary.rowsRead, rowsThisRun: rowsThisRun, final: true)
        try? FileManager.default.removeItem(at: stateURL)
        return .finished(report: checkpoint.summary.text(seconds: checkpoint.seconds, place: place))
    }
}
