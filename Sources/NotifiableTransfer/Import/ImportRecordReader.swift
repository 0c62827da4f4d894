import Foundation

/// Reads an import file record by record, in chunks, knowing each record's line number and the
/// byte offset just past it, so an import can resume at a record boundary.
///
/// In CSV mode a record is a line of comma-separated fields, where a field in double quotes may
/// hold commas, line breaks and `""` for a quote (RFC 4180). In line mode (JSON lines) a record
/// is one line, given as a single field. Blank lines are skipped; `\r\n` ends a line too.
struct ImportRecordReader {
    struct Record {
        var fields: [String]
        /// Line number (from 1) where the record starts.
        var line: Int
        /// Byte offset just past the record: where reading resumes after it.
        var endOffset: UInt64
    }

    private let handle: FileHandle
    private let csv: Bool
    private var buffer: [UInt8] = []
    private var position = 0
    /// File offset of `buffer[0]`.
    private var bufferOffset: UInt64
    private var atEnd = false
    private(set) var nextLine: Int
    static let chunkSize = 1 << 20

    init(url: URL, csv: Bool, offset: UInt64 = 0, line: Int = 1) throws {
        do {
            handle = try FileHandle(forReadingFrom: url)
        } catch {
            throw DeviceTransferFailure(
                "Cannot read \(url.path): \(FileManager.default.fileExists(atPath: url.path) ? "permission denied or not a file" : "no such file").")
        }
        try handle.seek(toOffset: offset)
        self.csv = csv
        bufferOffset = offset
        nextLine = line
    }

    var offset: UInt64 { bufferOffset + UInt64(position) }

    /// Moves to `offset` (a record boundary an earlier read reported) at `line`.
    mutating func seek(to offset: UInt64, line: Int) throws {
        try handle.seek(toOffset: offset)
        buffer = []
        position = 0
        bufferOffset = offset
        atEnd = false
        nextLine = line
    }

    /// The next non-blank record, or nil at the end of the file.
    mutating func next() throws -> Record? {
        while true {
            if let (record, consumed, lines) = parse(from: position, final: atEnd) {
                let start = nextLine
                position += consumed
                nextLine += lines
                if record.count == 1, record[0].isEmpty { continue }  // blank line
                return Record(fields: record, line: start, endOffset: offset)
            }
            if atEnd { return nil }
            try fill()
        }
    }

    private mutating func fill() throws {
        if position > 0 {
            buffer.removeFirst(position)
            bufferOffset += UInt64(position)
            position = 0
        }
        let chunk = try handle.read(upToCount: Self.chunkSize) ?? Data()
        if chunk.isEmpty { atEnd = true } else { buffer.append(contentsOf: chunk) }
    }

    /// One record starting at `start`: its fields, the bytes it used (with its line break) and
    /// the line breaks it crossed. Nil when the buffer ends first and more may follow, or when
    /// nothing is left at the end.
    private func parse(from start: Int, final: Bool) -> ([String], Int, Int)? {
        if start >= buffer.count { return nil }
        var fields: [String] = []
        var field: [UInt8] = []
        var index = start, lines = 0, quoted = false, fieldStart = true
        func finishField() {
            fields.append(String(decoding: field, as: UTF8.self))
            field.removeAll(keepingCapacity: true)
            fieldStart = true
        }
        while index < buffer.count {
            let byte = buffer[index]
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    if index + 1 < buffer.count, buffer[index + 1] == UInt8(ascii: "\"") {
                        field.append(byte)
                        index += 2
                        continue
                    }
                    if index + 1 >= buffer.count, !final { return nil }  // `""` may straddle chunks
                    quoted = false
                } else {
                    if byte == UInt8(ascii: "\n") { lines += 1 }
                    field.append(byte)
                }
                index += 1
                continue
            }
            switch byte {
            case UInt8(ascii: "\n"):
                if field.last == UInt8(ascii: "\r") { field.removeLast() }
                finishField()
                return (fields, index + 1 - start, lines + 1)
            case UInt8(ascii: ",") where csv:
                finishField()
            case UInt8(ascii: "\"") where csv && fieldStart && field.isEmpty:
                quoted = true
                fieldStart = false
            default:
                field.append(byte)
                fieldStart = false
            }
            index += 1
        }
        guard final else { return nil }
        // The last record has no line break after it.
        if field.last == UInt8(ascii: "\r") { field.removeLast() }
        finishField()
        return (fields, index - start, lines)
    }
}
