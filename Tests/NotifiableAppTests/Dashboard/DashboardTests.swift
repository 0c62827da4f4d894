import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

/// The operators' dashboard: signed in with the admin token (HttpOnly, SameSite=Strict cookie),
/// it shows apps, notifications and their outcomes, devices and the queue, and re-queues dead
/// deliveries only from its own forms.
@Suite struct DashboardTests {
    @Test func signInThenReadEveryPageWithTheRightNumbers() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                // Unsigned: sent to the sign-in form.
                let anonymous = try await client.execute(uri: "/dashboard", method: .get)
                #expect(anonymous.status == .seeOther)
                #expect(anonymous.headers[.location] == "/dashboard/login")
                #expect(try await client.execute(uri: "/dashboard/login", method: .get).status == .ok)
                let wrong = try await Self.login(client, token: "not-the-token")
                #expect(wrong.status == .unauthorized)
                #expect(wrong.headers[.setCookie] == nil)
                let signedIn = try await Self.login(client, token: service.configuration.adminToken ?? "")
                #expect(signedIn.status == .seeOther)
                let setCookie = try #require(signedIn.headers[.setCookie])
                #expect(setCookie.contains("HttpOnly"))
                #expect(setCookie.contains("SameSite=Strict"))
                let cookie = try #require(setCookie.split(separator: ";").first.map(String.init))
                func page(_ uri: String) async throws -> (HTTPResponse.Status, String) {
                    let answer = try await client.execute(uri: uri, method: .get, headers: [.cookie: cookie])
                    return (answer.status, String(buffer: answer.body))
                }
                #expect(try await client.execute(uri: "/dashboard", method: .get, headers: [.cookie: "notifiable_session=1.forged"]).status == .seeOther)

                // Seed: an app with four devices; one token gone, one refused for good, two sent.
                let app = try await service.createApp(name: "Shop <Main>")
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let tokens = (1...4).map { String(format: "%064x", 0xDA5 + $0) }
                var deviceIDs: [Int64] = []
                for (index, token) in tokens.enumerated() {
                    deviceIDs.append(
                        try await Pipeline.register(client, app.deviceCredential, token: token, alias: "u\(index)", language: index == 0 ? "fr" : nil))
                }
                gateway.script(token: tokens[2], [.unregistered(since: Date(timeIntervalSince1970: 0).addingTimeInterval(Date().timeIntervalSince1970 + 60))])
                gateway.script(token: tokens[3], [.reject(status: 400, reason: "PayloadEmpty")])
                let id = try await Pipeline.send(
                    client, app.serverCredential,
                    #"""
                    {"title": "Sale", "message": "Today only", "localized": {"fr": {"title": "Soldes"}}, "all": true}
                    """#)
                #expect(try await Pipeline.settled(service, id))
                _ = try await client.signed(
                    .post, "/api/v1/notifications/\(id)/opened", body: #"{"device_token_id": \#(deviceIDs[0])}"#, as: app.deviceCredential)

                let (appsStatus, apps) = try await page("/dashboard")
                #expect(appsStatus == .ok)
                #expect(apps.contains("Shop &lt;Main&gt;"))
                #expect(!apps.contains("Shop <Main>"))
                #expect(apps.contains("<span class=\"num\">3</span>"), "three reachable iOS devices")  // one invalidated
                #expect(apps.contains("<span class=\"ok\">ok</span>"))

                let (_, notifications) = try await page("/dashboard/apps/\(app.app.id)")
                #expect(notifications.contains("Sale"))
                #expect(notifications.contains("everyone"))
                #expect(notifications.contains("opened 1"))
                #expect(notifications.contains("50.0 %"), "opened 1 of 2 sent")

                let (detailStatus, detail) = try await page("/dashboard/apps/\(app.app.id)/notifications/\(id)")
                #expect(detailStatus == .ok)
                #expect(detail.contains("Soldes"))
                #expect(detail.contains("<svg"))
                #expect(detail.contains("Sent<b>2</b>"))
                #expect(detail.contains("Failed<b>2</b>"))
                #expect(detail.contains("Unregistered"))
                #expect(detail.contains("PayloadEmpty"))
                let (_, failedOnly) = try await page("/dashboard/apps/\(app.app.id)/notifications/\(id)?state=failed")
                // Two failure reasons and two failed rows; no sent row.
                #expect(failedOnly.components(separatedBy: "<span class=\"failed\">failed</span>").count - 1 == 4)
                #expect(!failedOnly.contains("<span class=\"sent\">sent</span>"))
                #expect(detail.contains("<span class=\"sent\">sent</span>"))

                let (deviceStatus, device) = try await page("/dashboard/apps/\(app.app.id)/devices/\(deviceIDs[2])")
                #expect(deviceStatus == .ok)
                #expect(device.contains(tokens[2]))
                #expect(device.contains("class=\"bad\""), "shown invalidated")
                #expect(device.contains("<td data-label=\"What\">registered</td>"))
                #expect(device.contains("<td data-label=\"What\">invalidated</td><td data-label=\"Detail\">Unregistered</td>"))

                #expect(!detail.contains("Users' states"), "a notification that is not stateful has none")
                // A stateful one shows its users' states.
                let kept = try await Pipeline.send(client, app.serverCredential, #"{"title": "Kept", "user_aliases": ["u0", "u1"], "stateful": true}"#)
                #expect(try await Pipeline.settled(service, kept))
                _ = try await client.signed(
                    .post, "/api/v1/notifications/\(kept)/opened", body: #"{"device_token_id": \#(deviceIDs[0]), "user": {"alias": "u0"}}"#,
                    as: app.deviceCredential
                )
                let (_, stateful) = try await page("/dashboard/apps/\(app.app.id)/notifications/\(kept)")
                #expect(stateful.contains("Users<b>2</b>"))
                #expect(stateful.contains("Read<b>1</b>"))
                #expect(stateful.contains("Activated<b>1</b>"))
                let tagged = try await Pipeline.send(
                    client, app.serverCredential,
                    #"{"title": "Tagged", "tag_expression": "beta && !lang:fr", "near": {"latitude": 51.5, "longitude": -0.12, "radius_m": 5000}}"#)
                let (_, taggedPage) = try await page("/dashboard/apps/\(app.app.id)/notifications/\(tagged)")
                #expect(taggedPage.contains("tags beta &amp;&amp; !lang:fr"))
                #expect(taggedPage.contains("within 5,000 m of 51.5, -0.12") || taggedPage.contains("within 5000 m of 51.5, -0.12"))

                let (redirect, _) = try await page("/dashboard/notifications/\(id)")
                #expect(redirect == .seeOther)
                let (missing, _) = try await page("/dashboard/apps/\(app.app.id)/notifications/999999999")
                #expect(missing == .notFound)
            }
        }
    }

    @Test func deadDeliveriesAreRequeuedOnlyWithTheFormsToken() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            try await Migrator(client: service.postgres, logger: TestDatabase.logger).migrate(try Migrator.load(from: TestDatabase.migrationsDirectory))
            let app = try await service.createApp()
            let device = try await Pipeline.register(client, app.deviceCredential, token: String(repeating: "ee", count: 32), alias: "z")
            let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "m", "user_aliases": ["z"]}"#)
            try await service.postgres.query(
                "INSERT INTO deliveries (notification_id, app_id, device_id, state, reason, dead_at) VALUES (\(id), \(app.app.id), \(device), 'dead', 'gave up', now())",
                logger: TestDatabase.logger
            )
            let signedIn = try await Self.login(client, token: service.configuration.adminToken ?? "")
            let cookie = try #require(signedIn.headers[.setCookie]?.split(separator: ";").first.map(String.init))
            let queue = String(buffer: try await client.execute(uri: "/dashboard/queue", method: .get, headers: [.cookie: cookie]).body)
            #expect(queue.contains("gave up"))
            // Read from the primary here (no read pool): no lag.
            #expect(queue.contains("Read replica lag<b>0.0 s</b>"), "\(queue)")
            let token = try #require(queue.components(separatedBy: "name=\"csrf\" value=\"").dropFirst().first?.split(separator: "\"").first.map(String.init))

            let forged = try await client.execute(
                uri: "/dashboard/queue/requeue", method: .post,
                headers: [.cookie: cookie, .contentType: "application/x-www-form-urlencoded"], body: ByteBuffer(string: "csrf=forged")
            )
            #expect(forged.status == .forbidden)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE state = 'dead'") == 1)

            let posted = try await client.execute(
                uri: "/dashboard/queue/requeue", method: .post,
                headers: [.cookie: cookie, .contentType: "application/x-www-form-urlencoded"], body: ByteBuffer(string: "csrf=\(token)")
            )
            #expect(posted.status == .seeOther)
            #expect(posted.headers[.location] == "/dashboard/queue?requeued=1")
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE state = 'dead'") == 0)
        }
    }

    @Test func pushDefaultsAreShownAndChangedOnlyWithTheFormsToken() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let signedIn = try await Self.login(client, token: service.configuration.adminToken ?? "")
            let cookie = try #require(signedIn.headers[.setCookie]?.split(separator: ";").first.map(String.init))
            let page = String(buffer: try await client.execute(uri: "/dashboard/apps/\(app.app.id)", method: .get, headers: [.cookie: cookie]).body)
            #expect(page.contains("Push defaults"))
            #expect(page.contains(#"<option value="data" selected>"#))
            #expect(page.contains(#"value="2419200""#))
            let token = try #require(page.components(separatedBy: "name=\"csrf\" value=\"").dropFirst().first?.split(separator: "\"").first.map(String.init))
            func post(_ form: String) async throws -> TestResponse {
                try await client.execute(
                    uri: "/dashboard/apps/\(app.app.id)/push-defaults", method: .post,
                    headers: [.cookie: cookie, .contentType: "application/x-www-form-urlencoded"], body: ByteBuffer(string: form)
                )
            }
            let change = "android_style=notification&default_ttl_seconds=3600&default_mutable_content=on"
            #expect(try await post("csrf=forged&" + change).status == .forbidden)
            #expect(try await service.apps.app(id: app.app.id)?.pushDefaults == PushDefaults())
            #expect(try await post("csrf=\(token)&android_style=loud&default_ttl_seconds=3600").status == .unprocessableContent)
            #expect(try await post("csrf=\(token)&android_style=data&default_ttl_seconds=10").status == .unprocessableContent)

            let saved = try await post("csrf=\(token)&" + change)
            #expect(saved.status == .seeOther)
            #expect(
                try await service.apps.app(id: app.app.id)?.pushDefaults
                    == PushDefaults(
                        androidStyle: .notification, timeToLiveSeconds: 3600, mutableContent: true, contentAvailable: false
                    ))
            let after = String(buffer: try await client.execute(uri: "/dashboard/apps/\(app.app.id)?saved=1", method: .get, headers: [.cookie: cookie]).body)
            #expect(after.contains("Push defaults saved."))
            #expect(after.contains(#"<option value="notification" selected>"#))
        }
    }

    static func login(_ client: some TestClientProtocol, token: String) async throws -> TestResponse {
        let encoded = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        return try await client.execute(
            uri: "/dashboard/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
            body: ByteBuffer(string: "token=\(encoded)")
        )
    }
}
