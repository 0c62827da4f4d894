import Foundation

/// The formats `devices import` reads and `devices export` writes.
public enum DeviceFileFormat: String, Sendable, CaseIterable {
    case csv, jsonl

    /// From the file's extension: `.csv`, or `.jsonl` / `.ndjson`.
    public init?(fileName: String) {
        switch URL(fileURLWithPath: fileName).pathExtension.lowercased() {
        case "csv": self = .csv
        case "jsonl", "ndjson": self = .jsonl
        default: return nil
        }
    }
}
