import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

@testable import NotifiableApp

/// The audit log holds every state-changing action: each such route of the admin API and the
/// console (the router's own list, so a new route cannot go unchecked), and the commands of the
/// command line; it is read in the console and exported as JSON lines.
@Suite struct AuditLogTests {
    @Test func everyStateChangingRouteOfTheAdminAPIAndTheConsoleIsRecorded() async throws {
        try await withTestService { client, service in
            let router = buildRouter(service.configuration, postgres: service.postgres, logger: TestDatabase.logger)
            let stateChanging = Set(
                router.routes.filter { $0.method != .get && $0.method != .head }
                    // The router writes a parameter `{id}`; the requests below name it `:id`, as the routes are declared.
                    .map { "\($0.method.rawValue) \($0.path.description.replacingOccurrences(of: "{", with: ":").replacingOccurrences(of: "}", with: ""))" }
                    .filter { $0.contains(" /admin/") || $0.contains(" /dashboard/") })

            let app = try await service.createApp(name: "Audited")
            let other = try await service.createApp(name: "Audited, to delete")
            _ = try await Pipeline.register(client, app.deviceCredential, token: String(repeating: "c3", count: 32), alias: "cat")
            let n = try await Pipeline.send(client, app.serverCredential, #"{"title": "Hi", "user_aliases": ["cat"]}"#)
            let viewer = try await ConsoleSession.addOperator(service, .viewer)
            let viewerID = try #require(try await OperatorStore(client: service.postgres, logger: TestDatabase.logger).account(name: viewer.name)?.id)
            let token = service.configuration.adminToken ?? ""
            let console = try await ConsoleSession.admin(client, service)

            func admin(_ method: HTTPRequest.Method, _ path: String, _ body: String = "{}") async throws -> TestResponse {
                try await client.execute(
                    uri: path, method: method, headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
                    body: ByteBuffer(string: body))
            }
            let webhook = try await admin(.post, "/admin/apps/\(app.app.id)/webhooks", #"{"url": "https://example.com/audited"}"#)
            let webhookID = try #require(webhook.json["id"]?.intValue)
            let base = "/dashboard/apps/\(app.app.id)"
            let oldAccessID = app.deviceCredential.accessID

            // Each route, with a request that reaches it: the pattern, the path, and how to send it.
            var requests: [(route: String, path: String, send: () async throws -> TestResponse)] = []
            func adminRoute(_ method: HTTPRequest.Method, _ route: String, _ path: String, _ body: String = "{}") {
                requests.append(("\(method.rawValue) \(route)", path, { try await admin(method, path, body) }))
            }
            func consoleRoute(_ route: String, _ path: String, _ fields: [String: String] = [:]) {
                requests.append(("POST \(route)", path, { try await console.post(path, fields) }))
            }
            adminRoute(.post, "/admin/apps", "/admin/apps", #"{"name": "Made by the admin API"}"#)
            adminRoute(.patch, "/admin/apps/:id", "/admin/apps/\(app.app.id)", #"{"name": "Audited 2"}"#)
            adminRoute(.post, "/admin/apps/:id/credentials/rotate", "/admin/apps/\(app.app.id)/credentials/rotate", #"{"role": "device"}"#)
            adminRoute(.delete, "/admin/apps/:id/credentials/:access_id", "/admin/apps/\(app.app.id)/credentials/\(oldAccessID)")
            adminRoute(.post, "/admin/apps/:id/user_tokens/rotate", "/admin/apps/\(app.app.id)/user_tokens/rotate")
            adminRoute(.put, "/admin/apps/:id/apns", "/admin/apps/\(app.app.id)/apns", #"{"key_id": "bad"}"#)
            adminRoute(.delete, "/admin/apps/:id/apns", "/admin/apps/\(app.app.id)/apns")
            adminRoute(.put, "/admin/apps/:id/fcm", "/admin/apps/\(app.app.id)/fcm", #"{"service_account": "{}"}"#)
            adminRoute(.delete, "/admin/apps/:id/fcm", "/admin/apps/\(app.app.id)/fcm")
            adminRoute(.put, "/admin/apps/:id/webpush", "/admin/apps/\(app.app.id)/webpush", #"{"subject": "mailto:ops@example.com"}"#)
            adminRoute(.delete, "/admin/apps/:id/webpush", "/admin/apps/\(app.app.id)/webpush")
            adminRoute(.post, "/admin/apps/:id/webhooks", "/admin/apps/\(app.app.id)/webhooks", #"{"url": "https://example.com/second"}"#)
            adminRoute(.post, "/admin/apps/:id/webhooks/:webhook_id/resume", "/admin/apps/\(app.app.id)/webhooks/\(webhookID)/resume")
            adminRoute(.delete, "/admin/apps/:id/webhooks/:webhook_id", "/admin/apps/\(app.app.id)/webhooks/\(webhookID)")
            adminRoute(.post, "/admin/deliveries/dead/requeue", "/admin/deliveries/dead/requeue", #"{"app_id": \#(app.app.id)}"#)
            adminRoute(.delete, "/admin/apps/:id", "/admin/apps/\(other.app.id)")
            consoleRoute("/dashboard/apps/:id/push-defaults", "\(base)/push-defaults", ["android_style": "data", "default_ttl_seconds": "3600"])
            consoleRoute("/dashboard/apps/:id/compose", "\(base)/compose", ["action": "send", "title": "Audited", "audience": "users", "users": "cat"])
            consoleRoute("/dashboard/apps/:id/notifications/:notification/requeue", "\(base)/notifications/\(n)/requeue")
            consoleRoute("/dashboard/apps/:id/notifications/:notification/cancel", "\(base)/notifications/\(n)/cancel")
            consoleRoute("/dashboard/queue/requeue", "/dashboard/queue/requeue", ["app": "\(app.app.id)"])
            consoleRoute(
                "/dashboard/operators", "/dashboard/operators",
                ["name": "audited-\(UUID().uuidString.prefix(6).lowercased())", "role": "viewer", "password": "twelve chars at least"])
            consoleRoute("/dashboard/operators/:operator", "/dashboard/operators/\(viewerID)", ["role": "viewer"])
            consoleRoute("/dashboard/apps", "/dashboard/apps", ["name": "Made in the console"])
            consoleRoute("/dashboard/apps/:id/settings", "\(base)/settings", ["name": "Audited 3", "mode": "sandbox", "retention_days": "7"])
            consoleRoute("/dashboard/apps/:id/credentials/rotate", "\(base)/credentials/rotate", ["role": "server", "grace_hours": "1"])
            consoleRoute("/dashboard/apps/:id/credentials/revoke", "\(base)/credentials/revoke", ["access_id": "not-one"])
            consoleRoute("/dashboard/apps/:id/gateways/:provider", "\(base)/gateways/apns", ["remove": "1"])
            consoleRoute("/dashboard/apps/:id/webhooks", "\(base)/webhooks", ["url": "https://example.com/console"])
            consoleRoute("/dashboard/apps/:id/people/export", "\(base)/people/export", ["alias": "cat"])
            consoleRoute("/dashboard/apps/:id/people/erase", "\(base)/people/erase", ["alias": "cat", "confirm": "cat"])
            consoleRoute("/dashboard/keys", "/dashboard/keys", ["label": "audited"])
            consoleRoute("/dashboard/keys/revoke", "/dashboard/keys/revoke", ["id": "999999"])
            // Signing in and out are recorded by their own handlers.
            requests.append(("POST /dashboard/login", "/dashboard/login", { try await DashboardTests.login(client, token: token) }))
            requests.append(("POST /dashboard/logout", "/dashboard/logout", { try await console.post("/dashboard/logout") }))

            #expect(Set(requests.map(\.route)) == stateChanging, "every state-changing route has a request here, and no other")
            for request in requests {
                let answer = try await request.send()
                let method = String(request.route.split(separator: " ")[0])
                let recorded = try await service.integer(
                    """
                    SELECT count(*) FROM audit_log WHERE action = \("\(method) \(request.path)") AND status = \(Int(answer.status.code))
                      AND actor = 'admin-token' AND origin IS NOT NULL
                      AND channel = \(request.path.hasPrefix("/admin") ? "admin-api" : "console")
                    """)
                #expect((recorded ?? 0) >= 1, "\(request.route) (\(answer.status.code)) is not in the audit log")
            }
            // What a change set is recorded beside its path: the role an operator was given.
            #expect(
                try await service.text(
                    "SELECT detail->>'role' || ' ' || (detail->>'operator') FROM audit_log WHERE action = \("POST /dashboard/operators/\(viewerID)")"
                ) == "viewer \(viewer.name)")
            // The app an action concerned is recorded, read from the path or from where the answer points.
            #expect(
                try await service.integer("SELECT count(*) FROM audit_log WHERE action = \("PATCH /admin/apps/\(app.app.id)") AND app_id = \(app.app.id)") == 1)
            #expect(
                try await service.integer(
                    "SELECT count(*) FROM audit_log WHERE action = 'POST /dashboard/apps' AND app_id IS NOT NULL AND actor = 'admin-token'") ?? 0 >= 1)
            // Reads are not recorded.
            _ = try await admin(.get, "/admin/apps/\(app.app.id)")
            #expect(try await service.integer("SELECT count(*) FROM audit_log WHERE action LIKE 'GET %'") == 0)

            // The console shows the log and exports it as JSON lines.
            let owner = try await ConsoleSession.admin(client, service)
            #expect(try await owner.page("/dashboard/audit?app=\(app.app.id)").contains("POST \(base)/compose"))
            let export = try await owner.get("/dashboard/audit.jsonl?app=\(app.app.id)")
            #expect(export.headers[.contentType]?.hasPrefix("application/x-ndjson") == true)
            let lines = String(buffer: export.body).split(separator: "\n")
            #expect(lines.count >= 10)
            for line in lines {
                let entry = try JSONValue.decode(Array(line.utf8))
                #expect(entry["app_id"]?.intValue == app.app.id)
                #expect(entry["actor"]?.stringValue != nil && entry["action"]?.stringValue != nil && entry["at"]?.stringValue != nil)
            }
        }
    }

    @Test func commandLineChangesAreRecordedWithTheUserAndExported() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let environment = [
                "DATABASE_URL": url, "NOTIFIABLE_MASTER_KEY": TestDatabase.masterKey.base64,
                "NOTIFIABLE_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path, "USER": "ops-person",
            ]
            func run(_ arguments: String..., input: String? = nil) async throws -> (status: Int32, output: String) {
                try await NotifiableProcess.run(arguments, environment: environment, input: input)
            }
            let created = try await run("apps", "create", "--name", "From the shell", "--json")
            #expect(created.status == 0, "\(created.output)")
            let id = try #require(try JSONValue.decode(Array(created.output.utf8))["id"]?.intValue)
            #expect(try await run("apps", "update", "--app", "\(id)", "--name", "Renamed").status == 0)
            #expect(try await run("apps", "update", "--app", "999999", "--name", "Nobody").status != 0)
            let added = try await run(
                "operators", "add", "--name", "Ana", "--role", "editor", "--apps", "\(id)", "--password-stdin", input: "a password of length\n")
            #expect(added.status == 0 && added.output.contains("Added editor ana"), "\(added.output)")
            let short = try await run("operators", "add", "--name", "bo", "--role", "viewer", "--password-stdin", input: "short\n")
            #expect(short.status != 0 && short.output.contains("at least 12 characters"), "\(short.output)")
            #expect(try await run("operators", "add", "--name", "cy", "--role", "editor", "--password-stdin", input: "a password of length\n").status != 0)
            let disabled = try await run("operators", "update", "--name", "ana", "--disable")
            #expect(disabled.status == 0 && disabled.output.contains("disabled"), "\(disabled.output)")
            #expect(try await run("operators", "list").output.contains("ana\teditor\t\(id)\tdisabled"))

            let export = try await run("audit", "export")
            #expect(export.status == 0, "\(export.output)")
            let entries = try export.output.split(separator: "\n").map { try JSONValue.decode(Array($0.utf8)) }
            func entry(_ action: String, status: Int64) -> JSONValue? {
                entries.first { $0["action"]?.stringValue == action && $0["status"]?.intValue == status }
            }
            let create = try #require(entry("apps create", status: 0), "\(export.output)")
            #expect(create["actor"]?.stringValue == "cli:ops-person")
            #expect(create["channel"]?.stringValue == "cli")
            #expect(create["app_id"]?.intValue == id, "the new app is named")
            #expect(entry("apps update", status: 0)?["app_id"]?.intValue == id)
            #expect(entry("apps update", status: 1) != nil, "a refused change is recorded as refused")
            #expect(entry("operators add", status: 0)?["detail"]?["operator"]?.stringValue == "ana")
            #expect(entry("operators add", status: 0)?["detail"]?["role"]?.stringValue == "editor")
            #expect(entry("operators update", status: 0)?["detail"]?["access"]?.stringValue == "disable")
            #expect(entry("operators update", status: 0) != nil)
            #expect(entries.allSatisfy { $0["action"]?.stringValue != "operators list" }, "reads are not recorded")
            let onlyApp = try await run("audit", "export", "--app", "\(id)")
            #expect(onlyApp.output.split(separator: "\n").count == 2, "\(onlyApp.output)")
        }
    }
}
