import Logging
import Synchronization

/// Keeps every log line (message and metadata, as text) written through its logger, so a test
/// can check what the service logged, e.g. that no secret ever appears.
public final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])

    public init() {}

    /// A logger at `level` whose every line lands here.
    public func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "captured") { label in Handler(capture: self, label: label) }
        logger.logLevel = level
        return logger
    }

    public var text: String { lines.withLock { $0.joined(separator: "\n") } }
    public var count: Int { lines.withLock { $0.count } }

    fileprivate func append(_ line: String) { lines.withLock { $0.append(line) } }

    private struct Handler: LogHandler {
        let capture: LogCapture
        let label: String
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(
            level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
            file: String, function: String, line: UInt
        ) {
            let merged = self.metadata.merging(metadata ?? [:]) { _, new in new }
            capture.append("\(level) \(label): \(message) \(merged.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " "))")
        }
    }
}
