import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

@testable import NotifiableApp

/// A person's data from the console: the export downloads what the API's export gives, the erasure
/// asks for the alias twice, and the audit log names the operator and the person only by digest.
@Suite struct ConsolePeopleTests {
    @Test func anAdminExportsThenErasesAPersonAndTheAliasStaysOutOfTheAuditLog() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp(name: "People")
            let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x9E1), alias: "pat@example.com")
            let other = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x9E2), alias: "quinn")
            let account = try await ConsoleSession.addOperator(service, .admin, apps: [app.app.id])
            let console = try await ConsoleSession.signIn(client, service, name: account.name, password: account.password)
            let page = "/dashboard/apps/\(app.app.id)/people"
            #expect(try await console.page("/dashboard/apps/\(app.app.id)").contains(page), "the app's menu links to it")

            let exported = try await console.post("\(page)/export", ["alias": "pat@example.com"])
            #expect(exported.status == .ok)
            #expect(exported.headers[.contentDisposition]?.contains("attachment") == true)
            let document = try JSONValue.decode(Array(exported.body.readableBytesView))
            #expect(document["devices"]?.arrayValue?.map { $0["id"]?.intValue } == [device])

            let unconfirmed = try await console.post("\(page)/erase", ["alias": "pat@example.com", "confirm": "pat"])
            #expect(unconfirmed.status == .unprocessableContent)
            #expect(try await service.text("SELECT user_alias FROM devices WHERE id = \(device)") == "pat@example.com", "nothing erased unconfirmed")

            let erased = try await console.post("\(page)/erase", ["alias": "pat@example.com", "confirm": "pat@example.com"])
            #expect(erased.status == .ok)
            #expect(String(buffer: erased.body).contains(#"<td data-label="What">devices</td><td data-label="Removed">1</td>"#))
            #expect(try await service.text("SELECT token FROM devices WHERE id = \(device)") == "erased:\(device)")
            #expect(try await service.text("SELECT user_alias FROM devices WHERE id = \(other)") == "quinn")
            #expect(try await console.post("\(page)/erase", ["alias": "a\u{7}b", "confirm": "a\u{7}b"]).status == .unprocessableContent)

            let entries = try await service.integer(
                "SELECT count(*) FROM audit_log WHERE app_id = \(app.app.id) AND actor = \("operator:\(account.name)") AND action = 'erase user'")
            #expect(entries == 1)
            #expect(try await service.integer("SELECT count(*) FROM audit_log WHERE audit_log::text LIKE '%pat@example%'") == 0)
        }
    }
}
