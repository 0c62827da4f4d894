import Foundation
import NotifiableCore
import NotifiableTesting
import Testing

/// `notifiable users export|erase|erased`: a person's data from the command line.
@Suite struct UsersCommandTests {
    @Test func exportEraseAndAskWhetherErased() async throws {
        try await CLIFixture.with { cli in
            let app = try await cli.createApp()
            try await cli.register(app: app, token: Hex.token(0x51), alias: "sam")
            try await cli.register(app: app, token: Hex.token(0x52), alias: "sam")
            try await cli.register(app: app, token: Hex.token(0x53), alias: "tess")

            let file = cli.folder.appendingPathComponent("sam.json")
            let exported = try await cli.run("users", "export", "--app", "\(app)", "--alias", "sam", "--output", file.path)
            #expect(exported.status == 0, "\(exported.output)")
            let document = try JSONValue.decode(Array(try Data(contentsOf: file)))
            #expect(Set(document["devices"]?.arrayValue?.compactMap { $0["token"]?.stringValue } ?? []) == [Hex.token(0x51), Hex.token(0x52)])
            let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
            #expect(mode == 0o600)

            #expect(try await cli.run("users", "erased", "--app", "\(app)", "--alias", "sam").status == 1)
            let erased = try await cli.run("users", "erase", "--app", "\(app)", "--alias", "sam", "--json")
            #expect(erased.status == 0, "\(erased.output)")
            let counts = try JSONValue.decode(Array(erased.output.utf8))
            #expect(counts["erased"]?["devices"]?.intValue == 2)
            let asked = try await cli.run("users", "erased", "--app", "\(app)", "--alias", "sam")
            #expect(asked.status == 0 && asked.output.contains("by cli:"), "\(asked.output)")
            #expect(try await cli.run("users", "erased", "--app", "\(app)", "--alias", "tess").status == 1)
            let devices = try await cli.devices(app: app)
            #expect(devices.keys.filter { !$0.hasPrefix("erased ") } == [Hex.token(0x53)], "only tess's device keeps its token")
            #expect(devices.values.filter { $0.alias == nil }.count == 2)

            let empty = try await cli.run("users", "export", "--app", "\(app)", "--alias", "sam")
            #expect(try JSONValue.decode(Array(empty.output.utf8))["devices"]?.arrayValue?.isEmpty == true, "\(empty.output)")
            #expect(try await cli.run("users", "erase", "--app", "\(app)", "--alias", "").status != 0)
            #expect(try await cli.run("users", "erase", "--app", "999999", "--alias", "sam").output.contains("There is no app 999999"))
        }
    }
}
