/// How log lines are written to standard error (`LOG_FORMAT`).
public enum LogFormat: String, Sendable, CaseIterable {
    /// swift-log's readable lines: `timestamp level label: [metadata] message`.
    case text
    /// One JSON object per line: `timestamp`, `level`, `label`, `message`, `metadata`.
    case json
}
