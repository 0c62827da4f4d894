import Foundation
import NotifiableCore
import NotifiableStore

/// Up to one batch of rows read from an import's source.
struct ImportBatch: Sendable {
    var devices: [DeviceFields] = []
    /// Rows that failed validation, with their line number (or notifiable-rails id).
    var rejected: [(error: ValidationError, line: Int)] = []
    var rowsRead = 0
    /// Where the source stands after the batch.
    var end: ImportCheckpoint.Position

    mutating func add(_ result: Result<DeviceFields, ValidationError>, line: Int) {
        rowsRead += 1
        switch result {
        case .success(let device): devices.append(device)
        case .failure(let error): rejected.append((error, line))
        }
    }
}

/// Where import rows come from: a file or a notifiable-rails database.
protocol DeviceImportSource {
    /// Progress in the source's unit (bytes or rows): all of it, and what lies before `position`.
    var total: UInt64 { get }
    func done(at position: ImportCheckpoint.Position, rowsThisRun: Int) -> UInt64
    /// The next rows, at most `limit`; nil when the source is exhausted.
    mutating func next(limit: Int) async throws -> ImportBatch?
}

/// A CSV or JSON-lines file, resumed at a byte offset.
struct FileImportSource: DeviceImportSource {
    private var reader: ImportRecordReader
    private let format: DeviceFileFormat
    private var columns: [String] = []
    let total: UInt64

    init(url: URL, format: DeviceFileFormat, from position: ImportCheckpoint.Position) throws {
        self.format = format
        reader = try ImportRecordReader(url: url, csv: format == .csv)
        total = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.uint64Value ?? 0
        if format == .csv {
            // The header is read again on every run: a resumed import seeks past it afterwards.
            guard let header = try reader.next() else { throw DeviceTransferFailure("\(url.path) is empty: it needs a header row.") }
            columns = try DeviceImportRows.csvHeader(header.fields)
        }
        guard position.offset <= total else {
            throw DeviceTransferFailure("\(url.path) is shorter than when the checkpoint was saved; pass --restart to import it from the start.")
        }
        if position.offset > reader.offset { try reader.seek(to: position.offset, line: position.line) }
    }

    func done(at position: ImportCheckpoint.Position, rowsThisRun: Int) -> UInt64 { position.offset }

    mutating func next(limit: Int) async throws -> ImportBatch? {
        var batch = ImportBatch(end: ImportCheckpoint.Position(offset: reader.offset, line: reader.nextLine))
        while batch.rowsRead < limit, let record = try reader.next() {
            let columns = columns
            switch format {
            case .csv:
                batch.add(
                    DeviceImportRows.registration { () throws(ValidationError) in try DeviceImportRows.csvBody(record.fields, columns: columns) },
                    line: record.line)
            case .jsonl:
                batch.add(DeviceImportRows.registration { () throws(ValidationError) in try DeviceImportRows.jsonBody(record.fields[0]) }, line: record.line)
            }
            batch.end = ImportCheckpoint.Position(offset: record.endOffset, line: reader.nextLine)
        }
        return batch.rowsRead == 0 ? nil : batch
    }
}

/// notifiable-rails' `notifiable_device_tokens`, resumed after an id.
struct RailsImportSource: DeviceImportSource {
    let devices: NotifiableRailsDeviceStore
    let total: UInt64
    private let before: UInt64
    private var lastID: Int64

    init(devices: NotifiableRailsDeviceStore, from position: ImportCheckpoint.Position) async throws {
        self.devices = devices
        lastID = position.lastID
        total = UInt64(try await devices.count(afterID: 0))
        before = total - min(total, UInt64(try await devices.count(afterID: position.lastID)))
    }

    func done(at position: ImportCheckpoint.Position, rowsThisRun: Int) -> UInt64 { before + UInt64(rowsThisRun) }

    mutating func next(limit: Int) async throws -> ImportBatch? {
        let page = try await devices.page(afterID: lastID, limit: limit)
        guard let last = page.last else { return nil }
        var batch = ImportBatch(end: ImportCheckpoint.Position(lastID: last.id))
        for row in page {
            batch.add(DeviceImportRows.registration { () throws(ValidationError) in try DeviceImportRows.railsBody(row) }, line: Int(row.id))
        }
        lastID = last.id
        return batch
    }
}
