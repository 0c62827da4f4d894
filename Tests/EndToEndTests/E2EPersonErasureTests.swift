import Foundation
import HTTPTypes
import HummingbirdTesting
import NotifiableApp
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// A person's data, found and removed by alias: after `DELETE /api/v1/users/:alias`, a `pg_dump` of
/// the whole database holds none of what named them, another user's data is as it was, and every
/// notification's counters still equal a recount of its deliveries.
@Suite struct E2EPersonErasureTests {
    static let person = "erin.person@example.com"
    static let names = ["Erin's iPhone", "Erin's Pixel"]
    static let secrets = ["erin-secret-plan-7731", "erin-second-value-4410"]

    @Test func erasingAPersonLeavesNothingThatNamesThemAndKeepsCountersExact() async throws {
        try await withTestService(workers: true) { client, service in
            let created = try await client.admin(.post, "/admin/apps", body: #"{"name": "Erasure", "delivery_mode": "sandbox"}"#, service: service)
            let appID = try #require(created.json["id"]?.intValue)
            let device = Credential(.device, ofCreatedApp: created.json)
            let server = Credential(.server, ofCreatedApp: created.json)
            let webhook = try await client.admin(
                .post, "/admin/apps/\(appID)/webhooks", body: #"{"url": "http://127.0.0.1:9/hooks", "events": ["sent", "opened"]}"#, service: service)
            #expect(webhook.status == .created, "\(String(buffer: webhook.body))")

            func register(_ body: String) async throws -> Int64 { try await Pipeline.register(client, device, body: body) }
            // Every way a device comes to carry the alias: a registration with properties, a token
            // first registered for another user, a device whose token changes, a merge, an import.
            let tokens = (1...6).map { Pipeline.token(0xE0 + $0) }
            let phone = try await register(
                #"{"provider": "apns", "token": "\#(tokens[0])", "user_alias": "\#(Self.person)", "name": "\#(Self.names[0])", "language": "en", "country": "gb", "custom_properties": {"plan": "\#(Self.secrets[0])", "latitude": 51.5, "longitude": -0.12}, "tags": ["vip"]}"#
            )
            _ = try await register(#"{"provider": "apns", "token": "\#(tokens[1])", "user_alias": "previous-owner"}"#)
            let secondHand = try await register(
                #"{"provider": "apns", "token": "\#(tokens[1])", "user_alias": "\#(Self.person)", "name": "\#(Self.names[1])"}"#)
            let changing = try await register(#"{"provider": "fcm", "token": "fcm-\#(tokens[2])", "user_alias": "\#(Self.person)"}"#)
            let patched = try await client.signed(
                .patch, "/api/v1/device_tokens/\(changing)", body: #"{"token": "fcm-\#(tokens[3])", "custom_properties": {"note": "\#(Self.secrets[1])"}}"#,
                as: device)
            #expect(patched.status == .ok)
            // Another row holds tokens[4]; the phone moves onto it and the two merge.
            _ = try await register(#"{"provider": "apns", "token": "\#(tokens[4])", "user_alias": "\#(Self.person)"}"#)
            #expect(try await client.signed(.patch, "/api/v1/device_tokens/\(phone)", body: #"{"token": "\#(tokens[4])"}"#, as: device).status == .ok)
            var imported = DeviceFields()
            imported.provider = .apns
            imported.token = tokens[5]
            imported.userAlias = .set(Self.person)
            _ = try await DeviceImportStore(client: service.postgres, logger: TestDatabase.logger).write(appID: appID, devices: [imported]) { _, _ in }
            // Anonymised and unregistered afterwards: still the person's to erase.
            #expect(try await client.signed(.post, "/api/v1/device_tokens", body: #"{"provider": "apns", "token": "\#(tokens[5])"}"#, as: device).status == .ok)

            // Someone else in the same app, who must be left as they are.
            let bystanderToken = Pipeline.token(0xB0)
            let bystander = try await register(
                #"{"provider": "apns", "token": "\#(bystanderToken)", "user_alias": "bystander", "name": "Bea's iPad", "custom_properties": {"plan": "bea-plan"}}"#
            )

            // Plain, stateful, rich and webhooked notifications, delivered and opened.
            let plain = try await Pipeline.send(client, server, #"{"title": "Hello", "user_aliases": ["\#(Self.person)", "bystander"]}"#)
            let stateful = try await Pipeline.send(client, server, #"{"title": "Your order", "user_aliases": ["\#(Self.person)"], "stateful": true}"#)
            let rich = try await client.signed(
                .post, "/api/v1/notifications", body: #"{"title": "Photo", "user_aliases": ["\#(Self.person)"], "rich": true}"#, as: server)
            let richID = try #require(rich.json["id"]?.intValue)
            #expect(
                try await client.signed(.put, "/api/v1/notifications/\(richID)/content", bytes: [1, 2, 3], contentType: "image/png", as: server).status
                    == .created)
            for id in [plain, stateful, richID] { #expect(try await Pipeline.settled(service, id)) }
            // A tablet the person gave away: it had the alias, so it is theirs to erase, but what it
            // holds now and what it was sent since belong to its new owner, not to the export.
            let tabletToken = Pipeline.token(0xE9)
            let tablet = try await register(
                #"{"provider": "apns", "token": "\#(tabletToken)", "user_alias": "\#(Self.person)", "name": "\#(Self.names[0]) tablet"}"#)
            let toTablet = try await Pipeline.send(client, server, #"{"title": "Before", "device_ids": [\#(tablet)]}"#)
            #expect(try await Pipeline.settled(service, toTablet))
            try await Task.sleep(for: .milliseconds(20))
            _ = try await register(#"{"provider": "apns", "token": "\#(tabletToken)", "user_alias": "new-owner", "name": "New owner's tablet"}"#)
            let toNewOwner = try await Pipeline.send(client, server, #"{"title": "After", "user_aliases": ["new-owner"]}"#)
            #expect(try await Pipeline.settled(service, toNewOwner))
            for (id, target) in [(plain, phone), (plain, bystander), (stateful, secondHand)] {
                let opened = try await client.signed(
                    .post, "/api/v1/notifications/\(id)/opened", body: #"{"device_token_id": "\#(target)"}"#, as: device)
                #expect(opened.status == .ok || opened.status == .noContent, "\(String(buffer: opened.body))")
            }
            let user = try await client.userToken(for: Self.person, as: server)
            #expect(try await client.asUser(user, .patch, "/api/v1/me/notifications/\(stateful)", body: #"{"read_state": "read"}"#).status == .ok)
            #expect(try await Pipeline.settled(service, stateful))
            #expect(try await service.integer("SELECT count(*) FROM sandbox_pushes WHERE app_id = \(appID)") ?? 0 >= 4)
            #expect(try await service.integer("SELECT count(*) FROM webhook_events WHERE payload ->> 'user_alias' = \(Self.person)") ?? 0 > 0)

            // The export before: each fact is there.
            let encoded = Self.person.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)!
            let before = try await client.signed(.get, "/api/v1/users/\(encoded)/data", as: server)
            #expect(before.status == .ok)
            let document = try JSONValue.decode(Array(before.body.readableBytesView))
            let exportedTokens = Set((document["devices"]?.arrayValue ?? []).compactMap { $0["token"]?.stringValue })
            #expect(exportedTokens.isSuperset(of: [tokens[1], "fcm-\(tokens[3])", tokens[4], tokens[5]]), "\(exportedTokens)")
            #expect(!exportedTokens.contains(bystanderToken))
            let text = String(buffer: before.body)
            for fact in Self.names + Self.secrets { #expect(text.contains(fact), "the export lacks \(fact)") }
            #expect(!text.contains("previous-owner"), "another user's alias is theirs, not in this export")
            #expect(document["user_notifications"]?.arrayValue?.first?["read_state"]?.stringValue == "read")
            let exportedDeliveries = document["deliveries"]?.arrayValue ?? []
            #expect(exportedDeliveries.contains { $0["notification_id"]?.intValue == plain && $0["opened_at"]?.stringValue != nil })
            #expect(exportedDeliveries.contains { $0["notification_id"]?.intValue == richID && $0["state"]?.stringValue == "sent" })
            #expect(document["sandbox_pushes"]?.arrayValue?.isEmpty == false)
            let exportedTablet = try #require(document["devices"]?.arrayValue?.first { $0["id"]?.intValue == tablet })
            #expect(exportedTablet["user_alias"]?.stringValue == "another user" && exportedTablet["name"] == nil, "\(exportedTablet)")
            #expect(exportedTablet["held_until"]?.stringValue != nil)
            #expect(!text.contains("new-owner") && !text.contains("New owner"))
            #expect(exportedDeliveries.contains { $0["notification_id"]?.intValue == toTablet })
            #expect(!exportedDeliveries.contains { $0["notification_id"]?.intValue == toNewOwner }, "pushes to the new owner are theirs")

            let bystanderBefore = try await Self.bystanderRows(service, bystander)
            let erased = try await client.signed(.delete, "/api/v1/users/\(encoded)", as: server)
            #expect(erased.status == .ok, "\(String(buffer: erased.body))")
            let counts = try #require(erased.json["erased"])
            #expect(counts["devices"]?.intValue == 6, "\(counts)")
            #expect(counts["user_notifications"]?.intValue == 1)
            #expect(counts["user_feeds"]?.intValue == 1)
            #expect(counts["notifications_retargeted"]?.intValue == 3)
            #expect((counts["sandbox_pushes"]?.intValue ?? 0) > 0 && (counts["webhook_events"]?.intValue ?? 0) > 0)

            let dump = try await SecretsAtRestTests.pgDump(service.configuration.databaseURL)
            #expect(dump.contains("bystander"), "the dump is not of the service's database")
            for trace in [Self.person, tabletToken] + Self.names + Self.secrets + tokens + tokens.map({ "fcm-" + $0 }) {
                #expect(!dump.contains(trace), "the database still holds \(trace)")
            }
            #expect(try await Self.bystanderRows(service, bystander) == bystanderBefore)
            for id in [plain, stateful, richID, toTablet, toNewOwner] {
                #expect(try await service.keptCounters(of: id) == service.recountedCounters(of: id), "notification \(id)")
            }
            // The bystander's counters in the shared notification still show both.
            #expect(try await service.keptCounters(of: plain).opened == 2)

            // The export after is empty; a second erasure finds nothing; the audit log knows by digest.
            let after = try JSONValue.decode(Array(try await client.signed(.get, "/api/v1/users/\(encoded)/data", as: server).body.readableBytesView))
            for section in ["devices", "user_notifications", "deliveries", "sandbox_pushes"] { #expect(after[section]?.arrayValue?.isEmpty == true) }
            let again = try await client.signed(.delete, "/api/v1/users/\(encoded)", as: server)
            #expect(again.json["erased"]?["devices"]?.intValue == 0)
            let personal = PersonalData(client: service.postgres, keys: service.configuration.keys, logger: TestDatabase.logger)
            let logged = try await personal.erasures(of: Self.person, appID: appID)
            #expect(logged.count == 2)
            #expect(logged.first?.channel == .api && logged.first?.actor == "server credential \(server.accessID)")
            #expect(try await personal.erasures(of: "bystander", appID: appID).isEmpty)

            // The person may come back: a new registration of their old token is a new, working device.
            let returning = try await register(#"{"provider": "apns", "token": "\#(tokens[0])", "user_alias": "\#(Self.person)"}"#)
            #expect(returning != phone)
        }
    }

    @Test func anUnknownAliasIsZeroAndABadOneIsRefused() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let unknown = try await client.signed(.delete, "/api/v1/users/nobody-here", as: app.serverCredential)
            #expect(unknown.status == .ok)
            #expect(unknown.json["erased"]?.objectValue?.values.allSatisfy { $0.intValue == 0 } == true, "\(unknown.json)")
            let empty = try JSONValue.decode(
                Array(try await client.signed(.get, "/api/v1/users/nobody-here/data", as: app.serverCredential).body.readableBytesView))
            #expect(empty["devices"]?.arrayValue?.isEmpty == true)

            let long = String(repeating: "a", count: 256)
            for (method, path) in [(HTTPRequest.Method.delete, "/api/v1/users/\(long)"), (.delete, "/api/v1/users/a%0Ab"), (.get, "/api/v1/users/a%09b/data")] {
                let refused = try await client.signed(method, path, as: app.serverCredential)
                #expect(refused.status == .unprocessableContent && refused.errorCode == "invalid_user_alias", "\(path)")
            }
            // Device credentials may not erase or read a person.
            #expect(try await client.signed(.delete, "/api/v1/users/nobody-here", as: app.deviceCredential).status == .forbidden)
            #expect(try await client.signed(.get, "/api/v1/users/nobody-here/data", as: app.deviceCredential).status == .forbidden)
            // And a registration may not give a device an alias no request could name.
            let control = try await client.signed(
                .post, "/api/v1/device_tokens", body: #"{"provider": "apns", "token": "\#(Pipeline.token(9))", "user_alias": "a\u0007b"}"#,
                as: app.deviceCredential)
            #expect(control.errorCode == "invalid_user_alias")
        }
    }

    /// What the bystander has: their device row, history, deliveries.
    static func bystanderRows(_ service: TestService, _ id: Int64) async throws -> [String] {
        [
            try await service.text("SELECT row_to_json(d)::text FROM (SELECT * FROM devices WHERE id = \(id)) d") ?? "",
            try await service.text("SELECT string_agg(event || coalesce(user_alias, ''), ',' ORDER BY id) FROM device_events WHERE device_id = \(id)") ?? "",
            try await service.text(
                "SELECT string_agg(state || coalesce(opened_at::text, ''), ',' ORDER BY id) FROM deliveries WHERE device_id = \(id)") ?? "",
        ]
    }
}
