import Foundation
import NotifiableCore
import NotifiableTesting
import Testing

/// `notifiable apps webhooks …` does what the admin API does, over the same database.
@Suite struct WebhooksCommandTests {
    @Test func operatorsManageWebhooksFromTheShell() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let id = String(app.app.id)
            let environment = [
                "DATABASE_URL": try TestDatabase.url(), "NOTIFIABLE_MASTER_KEY": TestDatabase.masterKey.base64,
                "NOTIFIABLE_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path,
            ]
            func run(_ arguments: String...) async throws -> (status: Int32, output: String) {
                try await NotifiableProcess.run(arguments, environment: environment)
            }
            let added = try await run(
                "apps", "webhooks", "add", "--app", id, "--url", "https://example.com/hooks", "--event", "opened", "--event", "dead", "--json")
            #expect(added.status == 0, "\(added.output)")
            let webhook = try JSONValue.decode(Array(added.output.utf8))
            let webhookID = try #require(webhook["id"]?.intValue)
            #expect(webhook["events"] == .array([.string("opened"), .string("dead")]))
            #expect(webhook["secret"]?.stringValue?.hasPrefix("whsec_") == true)

            // What the shell registered, the API lists, without the secret.
            let listed = try await client.admin(.get, "/admin/apps/\(id)/webhooks", service: service)
            #expect(listed.json["data"]?[0]?["id"]?.intValue == webhookID)
            #expect(listed.json["data"]?[0]?["secret"] == nil)
            let printed = try await run("apps", "webhooks", "list", "--app", id)
            #expect(try JSONValue.decode(Array(printed.output.utf8))["data"]?[0]?["url"]?.stringValue == "https://example.com/hooks")
            #expect(!printed.output.contains("whsec_"))

            let refused = try await run("apps", "webhooks", "add", "--app", id, "--url", "https://example.com", "--event", "bounced")
            #expect(refused.status != 0 && refused.output.contains("--event") && refused.output.contains("bounced"), "\(refused.output)")
            let badURL = try await run("apps", "webhooks", "add", "--app", id, "--url", "file:///etc/passwd")
            #expect(badURL.status != 0 && badURL.output.contains("--url"), "\(badURL.output)")
            // Where only public targets are allowed, the service's own network is refused as the API
            // refuses it; an unknown app is named.
            let onOwnNetwork = try await NotifiableProcess.run(
                ["apps", "webhooks", "add", "--app", id, "--url", "http://127.0.0.1:9/hooks"],
                environment: environment.merging(["NOTIFIABLE_WEBHOOK_PUBLIC_TARGETS_ONLY": "true"]) { $1 })
            #expect(onOwnNetwork.status != 0 && onOwnNetwork.output.contains("--url: "), "\(onOwnNetwork.output)")
            let noApp = try await run("apps", "webhooks", "add", "--app", "999999999", "--url", "https://example.com/hooks")
            #expect(noApp.status != 0 && noApp.output.contains("There is no app 999999999"), "\(noApp.output)")

            let batches = try await run("apps", "webhooks", "batches", "--app", id, "--webhook", String(webhookID))
            #expect(batches.status == 0, "\(batches.output)")
            #expect(try JSONValue.decode(Array(batches.output.utf8))["data"] == .array([]))
            let resumed = try await run("apps", "webhooks", "resume", "--app", id, "--webhook", String(webhookID))
            #expect(resumed.status == 0, "\(resumed.output)")
            #expect(try JSONValue.decode(Array(resumed.output.utf8))["state"]?.stringValue == "active")
            #expect(try await run("apps", "webhooks", "remove", "--app", id, "--webhook", String(webhookID)).status == 0)
            let gone = try await run("apps", "webhooks", "remove", "--app", id, "--webhook", String(webhookID))
            #expect(gone.status != 0 && gone.output.contains("has no webhook"), "\(gone.output)")
        }
    }
}
