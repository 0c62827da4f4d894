import Foundation
import Testing

@testable import NotifiableTransfer

@Suite struct ImportRecordReaderTests {
    func file(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID().uuidString).csv")
        try Data(text.utf8).write(to: url)
        return url
    }

    func records(_ text: String, csv: Bool = true) throws -> [ImportRecordReader.Record] {
        let url = try file(text)
        defer { try? FileManager.default.removeItem(at: url) }
        var reader = try ImportRecordReader(url: url, csv: csv)
        var all: [ImportRecordReader.Record] = []
        while let record = try reader.next() { all.append(record) }
        return all
    }

    @Test func quotedFieldsHoldCommasQuotesAndLineBreaksAsRFC4180Says() throws {
        let all = try records("token,name\r\nab,\"Alice, \"\"A\"\"\nsecond line\"\n\ncd,plain")
        #expect(all.map(\.fields) == [["token", "name"], ["ab", "Alice, \"A\"\nsecond line"], ["cd", "plain"]])
        // Lines count from 1; the quoted line break and the blank line are counted.
        #expect(all.map(\.line) == [1, 2, 5])
    }

    @Test func aQuoteInsideAnUnquotedFieldIsKeptAsText() throws {
        #expect(try records("a\"b,c\n").map(\.fields) == [["a\"b", "c"]])
    }

    @Test func lineModeGivesEachLineWholeCommasIncluded() throws {
        #expect(try records("{\"a\":1,\"b\":2}\n\n{}\n", csv: false).map(\.fields) == [["{\"a\":1,\"b\":2}"], ["{}"]])
    }

    @Test func seekingToARecordsEndOffsetResumesAtTheNextRecord() throws {
        let url = try file("h\nfirst\n\"sec\nond\"\nthird\n")
        defer { try? FileManager.default.removeItem(at: url) }
        var reader = try ImportRecordReader(url: url, csv: true)
        _ = try reader.next()
        let first = try #require(try reader.next())
        var resumed = try ImportRecordReader(url: url, csv: true)
        try resumed.seek(to: first.endOffset, line: 3)
        let second = try #require(try resumed.next())
        #expect(second.fields == ["sec\nond"] && second.line == 3)
        #expect(try resumed.next()?.line == 5)
    }

    @Test func aMissingFileIsReportedByName() throws {
        #expect(throws: DeviceTransferFailure("Cannot read /nonexistent/devices.csv: no such file.")) {
            _ = try ImportRecordReader(url: URL(fileURLWithPath: "/nonexistent/devices.csv"), csv: true)
        }
    }
}
