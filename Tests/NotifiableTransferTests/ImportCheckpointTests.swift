import Foundation
import NotifiableCore
import Testing

@testable import NotifiableTransfer

@Suite struct ImportCheckpointTests {
    @Test func aSavedCheckpointLoadsBackWhole() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString).import-state")
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(try ImportCheckpoint.load(url) == nil)
        var checkpoint = ImportCheckpoint(source: "file:/tmp/a.csv", appID: 3)
        checkpoint.position = .init(offset: 120, line: 9)
        checkpoint.summary.rowsRead = 8
        checkpoint.summary.reject(ValidationError(code: "invalid_token", message: "bad"), at: 4)
        checkpoint.inFlight = .init(at: "2026-11-25 01:00:00.123456+00", position: .init(offset: 200, line: 12), summary: checkpoint.summary, batches: 2)
        try checkpoint.save(url)
        #expect(try ImportCheckpoint.load(url) == checkpoint)
    }

    @Test func anUnreadableCheckpointNamesTheWayOut() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString).import-state")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data("not json".utf8).write(to: url)
        do {
            _ = try ImportCheckpoint.load(url)
            Issue.record("loaded a file that is not a checkpoint")
        } catch {
            #expect("\(error)".hasSuffix("remove it or pass --restart."))
        }
    }

    @Test func theReportListsReasonsMostFrequentFirstWithTheirFirstLines() {
        var summary = ImportSummary()
        summary.rowsRead = 10
        for line in [2, 3, 4, 5, 6, 7] { summary.reject(ValidationError(code: "invalid_token", message: "The token is not hex."), at: line) }
        summary.reject(ValidationError(code: "invalid_language", message: "Language?"), at: 9)
        let report = summary.text(seconds: 2, place: "lines")
        #expect(report.hasPrefix("Read 10 rows in 2.0 s (5 rows/s)."))
        let lines = report.split(separator: "\n").map(String.init)
        #expect(
            lines.suffix(2) == [
                "    invalid_token: 6 (lines 2, 3, 4, 5, 6, …) e.g. The token is not hex.",
                "    invalid_language: 1 (lines 9) e.g. Language?",
            ])
    }
}
