import Foundation

/// Where an interrupted import resumes: a small JSON file written after every batch.
///
/// A batch commits in its own transaction. Just before the commit the file records the batch as
/// in flight (where it ends, the summary with it, and its transaction's timestamp); just after,
/// as done. A crash between the two leaves the batch in flight, and the next run asks the
/// database whether rows with that timestamp exist: if so the batch committed and its counts are
/// kept, otherwise it is read again. Either way every row is counted once.
struct ImportCheckpoint: Codable, Equatable {
    /// A place in the source: after a byte offset and line of a file, or after a notifiable-rails id.
    struct Position: Codable, Equatable {
        var offset: UInt64 = 0
        var line: Int = 1
        var lastID: Int64 = 0
    }

    struct InFlight: Codable, Equatable {
        var at: String
        var position: Position
        var summary: ImportSummary
        var batches: Int
    }

    var source: String
    var appID: Int64
    var position = Position()
    var summary = ImportSummary()
    var batches = 0
    var seconds: Double = 0
    var inFlight: InFlight?

    /// The saved checkpoint at `url`, nil when none is there.
    static func load(_ url: URL) throws -> ImportCheckpoint? {
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        do {
            return try JSONDecoder().decode(ImportCheckpoint.self, from: data)
        } catch {
            throw DeviceTransferFailure("The checkpoint \(url.path) is unreadable (\(error)); remove it or pass --restart.")
        }
    }

    /// Writes the file whole or not at all (a new file renamed over the old), so a crash while
    /// saving leaves the previous checkpoint.
    func save(_ url: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let temporary = url.appendingPathExtension("tmp")
        try encoder.encode(self).write(to: temporary)
        guard rename(temporary.path, url.path) == 0 else {
            throw DeviceTransferFailure("Could not save the checkpoint \(url.path): \(String(cString: strerror(errno))).")
        }
    }
}
