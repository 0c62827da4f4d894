import Foundation
import Logging
import NotifiableCore
import Synchronization

/// Writes each log entry as one JSON object on one line:
/// `{"timestamp":"2026-11-22T13:45:01.123Z","level":"info","label":"notifiable","message":"request","metadata":{…}}`.
/// Metadata keeps its shape (strings, arrays, objects); numbers and booleans given as such
/// (`.stringConvertible(404)`) stay numbers and booleans; other values become strings.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let write: @Sendable (String) -> Void

    /// Lines go to `write`, each ending in a newline.
    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil, write: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.write = write
    }

    /// Lines go to standard error, whole lines at a time even when many threads log.
    public static func standardError(label: String) -> JSONLogHandler {
        JSONLogHandler(label: label) { line in StandardErrorLines.write(line) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = self.metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        if let error = event.error, merged["error"] == nil { merged["error"] = "\(String(reflecting: error))" }
        write(Self.line(date: Date(), level: event.level, label: label, message: "\(event.message)", metadata: merged))
    }

    /// One entry as a JSON line (newline included); keys in a fixed order, metadata keys sorted.
    static func line(date: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        var out = "{\"timestamp\":"
        JSONText.appendQuoted(timestamp(date), to: &out)
        out += ",\"level\":"
        JSONText.appendQuoted(level.rawValue, to: &out)
        out += ",\"label\":"
        JSONText.appendQuoted(label, to: &out)
        out += ",\"message\":"
        JSONText.appendQuoted(message, to: &out)
        out += ",\"metadata\":"
        JSONLogText.appendMetadata(metadata, to: &out)
        out += "}\n"
        return out
    }

    private static let timestampStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// ISO 8601 in UTC with milliseconds.
    static func timestamp(_ date: Date) -> String {
        timestampStyle.format(date)
    }
}

/// JSON text for log entries, written by hand: no encoder allocation per line, and metadata
/// values of any nesting map directly.
enum JSONLogText {
    static func appendMetadata(_ metadata: Logger.Metadata, to out: inout String) {
        out += "{"
        for (index, key) in metadata.keys.sorted().enumerated() {
            if index > 0 { out += "," }
            JSONText.appendQuoted(key, to: &out)
            out += ":"
            appendValue(metadata[key]!, to: &out)
        }
        out += "}"
    }

    static func appendValue(_ value: Logger.Metadata.Value, to out: inout String) {
        switch value {
        case .string(let text): JSONText.appendQuoted(text, to: &out)
        case .stringConvertible(let convertible): appendScalar(convertible, to: &out)
        case .dictionary(let dictionary): appendMetadata(dictionary, to: &out)
        case .array(let values):
            out += "["
            for (index, element) in values.enumerated() {
                if index > 0 { out += "," }
                appendValue(element, to: &out)
            }
            out += "]"
        }
    }
}

extension JSONLogText {
    /// Numbers and booleans as JSON numbers and booleans (`"status":404`, `"ms":3.2`), so a log
    /// pipeline can compare and sum them; anything else as its description, quoted.
    static func appendScalar(_ value: any CustomStringConvertible & Sendable, to out: inout String) {
        switch value {
        case let number as any BinaryInteger: out += number.description
        case let number as Double where number.isFinite: out += number.description
        case let number as Float where number.isFinite: out += number.description
        case let flag as Bool: out += flag ? "true" : "false"
        default: JSONText.appendQuoted(value.description, to: &out)
        }
    }
}

/// Standard error, one whole line per write.
enum StandardErrorLines {
    private static let lock = Mutex(())

    static func write(_ line: String) {
        lock.withLock { _ in
            FileHandle.standardError.write(Data(line.utf8))
        }
    }
}
