import Foundation
import HummingbirdTesting
import NIOCore
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
            #expect(try await service.text("SELECT token FROM devices WHERE id = \(device)") == "erased \(device)")
            #expect(try await service.text("SELECT user_alias FROM devices WHERE id = \(other)") == "quinn")
            #expect(try await console.post("\(page)/erase", ["alias": "a\u{7}b", "confirm": "a\u{7}b"]).status == .unprocessableContent)

            let entries = try await service.integer(
                "SELECT count(*) FROM audit_log WHERE app_id = \(app.app.id) AND actor = \("operator:\(account.name)") AND action = 'erase user'")
            #expect(entries == 1)
            #expect(try await service.integer("SELECT count(*) FROM audit_log WHERE audit_log::text LIKE '%pat@example%'") == 0)
        }
    }
}

/// API keys from the console: an operator makes one (shown once) and revokes it; owners see all.
@Suite struct ConsoleKeysTests {
    @Test func anOperatorMakesAKeyThatActsAsThemAndRevokesIt() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp(name: "Keys")
            let account = try await ConsoleSession.addOperator(service, .editor, apps: [app.app.id])
            let console = try await ConsoleSession.signIn(client, service, name: account.name, password: account.password)
            let made = try await console.post("/dashboard/keys", ["label": "deploys", "expires_in_days": "7"])
            #expect(made.status == .ok)
            let page = String(buffer: made.body)
            let key = try #require(page.firstMatch(of: /nk_[A-Za-z0-9_-]{43}/).map { String($0.output) })
            let read = try await client.execute(uri: "/admin/apps/\(app.app.id)", method: .get, headers: [.authorization: "Bearer \(key)"])
            #expect(read.status == .ok)
            let write = try await client.execute(
                uri: "/admin/apps/\(app.app.id)", method: .patch, headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"name": "Renamed"}"#))
            #expect(write.status == .forbidden && write.errorCode == "role_not_allowed")
            #expect(write.json["error"]?["message"]?.stringValue?.contains("admin of the app") == true)
            #expect(!(try await console.page("/dashboard/keys")).contains(key), "shown once")

            let id = try #require(try await OperatorKeyStore(client: service.postgres, logger: TestDatabase.logger).list().first { $0.label == "deploys" }?.id)
            // Another operator (not an owner) cannot revoke it.
            let other = try await ConsoleSession.addOperator(service, .admin, apps: [app.app.id])
            let otherConsole = try await ConsoleSession.signIn(client, service, name: other.name, password: other.password)
            #expect(try await otherConsole.post("/dashboard/keys/revoke", ["id": "\(id)"]).status == .notFound)
            #expect(try await console.post("/dashboard/keys/revoke", ["id": "\(id)"]).status == .ok)
            let after = try await client.execute(uri: "/admin/apps/\(app.app.id)", method: .get, headers: [.authorization: "Bearer \(key)"])
            #expect(after.errorCode == "revoked_api_key")
            // The admin token has no account to make a key for.
            let token = try await ConsoleSession.admin(client, service)
            #expect(try await token.post("/dashboard/keys", ["label": "x"]).status == .unprocessableContent)
        }
    }
}

/// Exports hold a connection while their reader reads: two at a time per process, a third is told
/// to come back, and a finished (or abandoned) one frees its place.
@Suite struct ExportLimitTests {
    @Test func aThirdExportAtOnceIs429UntilOneEnds() async throws {
        try await withTestService { _, service in
            let personalData = PersonalData(client: service.postgres, keys: service.configuration.keys, logger: TestDatabase.logger)
            let app = try await service.createApp()
            let first = try personalData.reserveExport()
            var second: ExportReservation? = try personalData.reserveExport()
            #expect(second != nil)
            do {
                _ = try personalData.reserveExport()
                Issue.record("a third export was admitted")
            } catch let error as APIError {
                #expect(error.status == .tooManyRequests && error.code == "exports_busy" && error.headers[.retryAfter] == "5")
            }
            try await personalData.export(alias: "nobody", appID: app.app.id, in: first) { _ in }
            let third = try personalData.reserveExport()
            second = nil  // abandoned: its place comes back too
            _ = try personalData.reserveExport()
            withExtendedLifetime(third) {}
        }
    }
}
