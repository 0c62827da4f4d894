import Foundation
import NotifiableCore
import NotifiableStore

/// The running account of an import; kept in the checkpoint so a resumed import reports the
/// whole run, not only its last part.
struct ImportSummary: Codable, Equatable {
    struct Rejection: Codable, Equatable {
        var count = 0
        /// The first rejected row's message, as an example of the reason.
        var example: String
        /// The first few line numbers (or notifiable-rails ids) rejected for this reason.
        var first: [Int] = []
    }

    static let linesKept = 5

    var rowsRead = 0
    var written = DeviceImportCounts()
    /// Rows a later row of the same batch overrode (same token, compared case-insensitively).
    var superseded = 0
    /// Rejections by error code.
    var rejected: [String: Rejection] = [:]

    var rejectedCount: Int { rejected.values.reduce(0) { $0 + $1.count } }

    mutating func reject(_ error: ValidationError, at line: Int) {
        var entry = rejected[error.code] ?? Rejection(example: error.message)
        entry.count += 1
        if entry.first.count < Self.linesKept { entry.first.append(line) }
        rejected[error.code] = entry
    }

    /// The closing report; `where` names what the numbers in rejections are (lines or ids).
    func text(seconds: Double, place: String) -> String {
        let rate = seconds > 0 ? Int(Double(rowsRead) / seconds) : rowsRead
        var lines = [
            "Read \(rowsRead) rows in \(String(format: "%.1f", seconds)) s (\(rate) rows/s).",
            "  imported (new):     \(written.imported)",
            "  updated:            \(written.updated)",
            "  reassigned:         \(written.reassigned)  (moved to another user alias)",
            "  anonymised:         \(written.anonymised)  (the row gave no user alias)",
            "  superseded:         \(superseded)  (a later row of the same batch had the same token)",
            "  rejected:           \(rejectedCount)",
        ]
        for (code, entry) in rejected.sorted(by: { ($0.value.count, $1.key) > ($1.value.count, $0.key) }) {
            let more = entry.count > entry.first.count ? ", …" : ""
            lines.append("    \(code): \(entry.count) (\(place) \(entry.first.map(String.init).joined(separator: ", "))\(more)) e.g. \(entry.example)")
        }
        return lines.joined(separator: "\n")
    }
}
