import Foundation

/// Shows an import's progress on standard error: a bar redrawn in place with rate and ETA on
/// a terminal, a plain line every two seconds otherwise (logs, CI), where `\r` would be noise.
struct ImportProgress {
    /// Work in the source's own unit: bytes of a file, rows of a table.
    let total: UInt64
    let startDone: UInt64
    let terminal = isatty(STDERR_FILENO) == 1
    let started = Date()
    private var lastShown = Date.distantPast

    init(total: UInt64, done: UInt64) {
        self.total = total
        startDone = done
    }

    /// `rows` counts the whole import (earlier runs too); the rate counts `rowsThisRun`.
    mutating func update(done: UInt64, rows: Int, rowsThisRun: Int, final: Bool = false) {
        let now = Date()
        let interval = terminal ? 0.2 : 2.0
        guard final || now.timeIntervalSince(lastShown) >= interval else { return }
        lastShown = now
        let elapsed = max(now.timeIntervalSince(started), 0.001)
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
        let rate = Int(Double(rowsThisRun) / elapsed)
        let progressed = Double(done - min(done, startDone))
        let eta = progressed > 0 ? elapsed * Double(total - min(total, done)) / progressed : nil
        let percent = String(format: "%3.0f%%", fraction * 100)
        let etaText = eta.map { Self.clock($0) } ?? "?"
        if terminal {
            let width = 30, filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            write("\r[\(bar)] \(percent) \(rows) rows  \(rate) rows/s  ETA \(etaText) ")
            if final { write("\n") }
        } else {
            write("progress: \(percent) \(rows) rows, \(rate) rows/s, ETA \(etaText)\n")
        }
    }

    private static func clock(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded())
        return whole >= 3600
            ? String(format: "%d:%02d:%02d", whole / 3600, whole / 60 % 60, whole % 60)
            : String(format: "%d:%02d", whole / 60, whole % 60)
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
