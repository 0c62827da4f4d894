import Foundation
import Synchronization

/// Where a fake gateway run as a command leaves what it saw, for a scenario in another process to read: the
/// statistics as one JSON object (``SandboxGatewayStats``), replaced whole at each write so a reader never sees half of
/// it, and the request log as tab-separated lines (``SandboxGatewayRequestRecord/tsvLine``) under a header, appended.
public final class SandboxGatewayStatsFiles: Sendable {
    public let statsPath: String?
    public let requestLogPath: String?
    private let log: Mutex<FileHandle?>

    /// Creates (or empties) the request log and writes its header line.
    public init(statsPath: String?, requestLogPath: String?) throws {
        self.statsPath = statsPath
        self.requestLogPath = requestLogPath
        var handle: FileHandle?
        if let requestLogPath {
            guard
                FileManager.default.createFile(
                    atPath: requestLogPath, contents: Data((SandboxGatewayRequestRecord.tsvHeader + "\n").utf8)
                ), let opened = FileHandle(forWritingAtPath: requestLogPath)
            else {
                throw SandboxGatewayError("Cannot write the request log \(requestLogPath).")
            }
            opened.seekToEndOfFile()
            handle = opened
        }
        self.log = Mutex(handle)
    }

    /// Appends `records` to the request log, then replaces the statistics file.
    public func write(stats: SandboxGatewayStats, records: [SandboxGatewayRequestRecord]) throws {
        if !records.isEmpty {
            var text = ""
            text.reserveCapacity(records.count * 120)
            for record in records {
                text += record.tsvLine
                text += "\n"
            }
            try log.withLock { handle in try handle?.write(contentsOf: Data(text.utf8)) }
        }
        if let statsPath {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try encoder.encode(stats).write(to: URL(fileURLWithPath: statsPath), options: .atomic)
        }
    }

    public func close() {
        log.withLock { handle in
            try? handle?.close()
            handle = nil
        }
    }
}
