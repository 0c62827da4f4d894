import Foundation
import NotifiableCore
import Testing

@testable import NotifiableStore
@testable import NotifiableTransfer

@Suite struct DeviceExportTextTests {
    let device = ExportedDevice(
        id: 7, provider: .apns, token: "ab12", name: "Alice's \"phone\", old", userAlias: "alice", language: "en", country: nil,
        customProperties: #"{"onsite":true}"#, tags: ["beta", "vip"], pushKeys: nil
    )

    @Test func aCSVLineReadsBackAsTheSameFields() throws {
        let text = DeviceExportText.csvHeader + "\n" + DeviceExportText.csv(device) + "\n"
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString).csv")
        try Data(text.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        var reader = try ImportRecordReader(url: url, csv: true)
        let header = try #require(try reader.next()).fields
        let row = try #require(try reader.next()).fields
        #expect(try DeviceImportRows.csvHeader(header) == DeviceImportRows.csvColumns)
        #expect(row == ["ab12", "apns", "alice", "en", "", #"{"onsite":true}"#, "Alice's \"phone\", old", "beta vip"])
    }

    @Test func fieldsAreQuotedOnlyWhenTheyMustBe() {
        #expect(DeviceExportText.csvField("plain") == "plain")
        #expect(DeviceExportText.csvField(" edge") == "\" edge\"")
        #expect(DeviceExportText.csvField("a\r\nb") == "\"a\r\nb\"")
    }

    @Test func aJSONLineLeavesOutWhatTheDeviceLacks() throws {
        let line = DeviceExportText.jsonLine(device)
        #expect(
            try JSONValue.decode(Array(line.utf8))
                == .object([
                    "token": .string("ab12"), "provider": .string("apns"), "user_alias": .string("alice"), "language": .string("en"),
                    "name": .string("Alice's \"phone\", old"), "tags": .array([.string("beta"), .string("vip")]),
                    "custom_properties": .object(["onsite": .bool(true)]),
                ])
        )
    }
}
