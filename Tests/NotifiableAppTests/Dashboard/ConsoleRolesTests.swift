import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

@testable import NotifiableApp

/// What each role may do in the console, tried through HTTP: every page and every form, by an
/// owner, an admin and an editor of one app, a viewer, and the admin token. Every form sent,
/// allowed or refused, is then found in the audit log with who sent it and how it ended.
@Suite struct ConsoleRolesTests {
    struct Role {
        let label: String
        let session: ConsoleSession
        let actor: String
    }

    /// One request and the status each role gets: owner, admin of A, editor of A, viewer, admin token.
    struct Step {
        let method: HTTPRequest.Method
        let path: String
        var fields: [String: String] = [:]
        let expected: [HTTPResponse.Status]
    }

    @Test func eachRoleGetsWhatItMayAndIsRefusedTheRest() async throws {
        try await withTestService { client, service in
            let a = try await service.createApp(name: "Roles A")
            let b = try await service.createApp(name: "Roles B")
            _ = try await Pipeline.register(client, a.deviceCredential, token: String(repeating: "a1", count: 32), alias: "ann")
            _ = try await Pipeline.register(client, b.deviceCredential, token: String(repeating: "b1", count: 32), alias: "bob")
            let n = try await Pipeline.send(client, a.serverCredential, #"{"title": "Hi", "user_aliases": ["ann"]}"#)
            let target = try await ConsoleSession.addOperator(service, .viewer)
            let targetID = try #require(try await OperatorStore(client: service.postgres, logger: TestDatabase.logger).account(name: target.name)?.id)

            var roles: [Role] = []
            for (role, apps) in [(OperatorRole.owner, [Int64]()), (.admin, [a.app.id]), (.editor, [a.app.id]), (.viewer, [])] {
                let account = try await ConsoleSession.addOperator(service, role, apps: apps)
                roles.append(
                    Role(
                        label: role.rawValue, session: try await ConsoleSession.signIn(client, service, name: account.name, password: account.password),
                        actor: "operator:\(account.name)"))
            }
            roles.append(Role(label: "admin token", session: try await ConsoleSession.admin(client, service), actor: "admin-token"))

            let (ok, see, refused, missing): (HTTPResponse.Status, HTTPResponse.Status, HTTPResponse.Status, HTTPResponse.Status) =
                (.ok, .seeOther, .forbidden, .notFound)
            let app = "/dashboard/apps/\(a.app.id)"
            let send = ["action": "send", "title": "From the console", "audience": "users", "users": "ann"]
            let steps: [Step] = [
                Step(method: .get, path: "/dashboard", expected: [ok, ok, ok, ok, ok]),
                Step(method: .get, path: app, expected: [ok, ok, ok, ok, ok]),
                Step(method: .get, path: "/dashboard/apps/\(b.app.id)", expected: [ok, missing, missing, ok, ok]),
                Step(method: .get, path: "\(app)/compose", expected: [ok, ok, ok, refused, ok]),
                Step(method: .get, path: "\(app)/settings", expected: [ok, ok, refused, refused, ok]),
                Step(method: .get, path: "\(app)/devices", expected: [ok, ok, ok, ok, ok]),
                Step(method: .get, path: "\(app)/trends", expected: [ok, ok, ok, ok, ok]),
                Step(method: .get, path: "\(app)/notifications/\(n)", expected: [ok, ok, ok, ok, ok]),
                Step(method: .get, path: "/dashboard/apps/\(b.app.id)/devices", expected: [ok, missing, missing, ok, ok]),
                Step(method: .get, path: "/dashboard/queue", expected: [ok, refused, refused, ok, ok]),
                Step(method: .get, path: "/dashboard/operators", expected: [ok, refused, refused, refused, ok]),
                Step(method: .get, path: "/dashboard/audit", expected: [ok, refused, refused, refused, ok]),
                Step(method: .get, path: "/dashboard/audit.jsonl", expected: [ok, refused, refused, refused, ok]),
                Step(method: .get, path: "/dashboard/apps/new", expected: [ok, refused, refused, refused, ok]),
                Step(
                    method: .post, path: "\(app)/compose", fields: ["action": "preview", "audience": "all", "title": "t"], expected: [ok, ok, ok, refused, ok]),
                Step(method: .post, path: "\(app)/compose", fields: send, expected: [see, see, see, refused, see]),
                Step(method: .post, path: "/dashboard/apps/\(b.app.id)/compose", fields: send, expected: [see, missing, missing, refused, see]),
                Step(method: .post, path: "\(app)/notifications/\(n)/requeue", expected: [see, see, see, refused, see]),
                Step(
                    method: .post, path: "\(app)/push-defaults", fields: ["android_style": "data", "default_ttl_seconds": "3600"],
                    expected: [see, see, refused, refused, see]),
                Step(method: .post, path: "\(app)/settings", fields: ["name": "Roles A", "mode": "live"], expected: [see, see, refused, refused, see]),
                Step(method: .post, path: "\(app)/credentials/revoke", fields: ["access_id": "none"], expected: [missing, missing, refused, refused, missing]),
                Step(
                    method: .post, path: "\(app)/credentials/rotate", fields: ["role": "device", "grace_hours": "24"], expected: [ok, ok, refused, refused, ok]),
                Step(method: .post, path: "\(app)/gateways/fcm", fields: ["remove": "1"], expected: [see, see, refused, refused, see]),
                Step(method: .post, path: "\(app)/webhooks", fields: ["url": "https://example.com/hook"], expected: [ok, ok, refused, refused, ok]),
                Step(method: .post, path: "/dashboard/queue/requeue", fields: ["app": "\(a.app.id)"], expected: [see, see, refused, refused, see]),
                Step(method: .post, path: "/dashboard/queue/requeue", expected: [see, refused, refused, refused, see]),
                Step(
                    method: .post, path: "/dashboard/apps", fields: ["name": "Made in the console", "mode": "sandbox"],
                    expected: [ok, refused, refused, refused, ok]),
                Step(
                    method: .post, path: "/dashboard/operators/\(targetID)", fields: ["role": "viewer", "apps": ""],
                    expected: [see, refused, refused, refused, see]),
                Step(method: .post, path: "\(app)/notifications/\(n)/cancel", expected: [see, see, see, refused, see]),
                Step(method: .get, path: "\(app)/people", expected: [ok, ok, refused, refused, ok]),
                Step(method: .get, path: "/dashboard/apps/\(b.app.id)/people", expected: [ok, missing, missing, refused, ok]),
                Step(method: .post, path: "\(app)/people/export", fields: ["alias": "nobody"], expected: [ok, ok, refused, refused, ok]),
                Step(
                    method: .post, path: "\(app)/people/erase", fields: ["alias": "nobody", "confirm": "nobody"], expected: [ok, ok, refused, refused, ok]),
            ]
            for step in steps {
                for (index, role) in roles.enumerated() {
                    var fields = step.fields
                    // Each role adds an operator of its own name.
                    if step.path == "/dashboard/operators" { fields["name"] = "added-by-\(index)-\(UUID().uuidString.prefix(6).lowercased())" }
                    let answer = step.method == .get ? try await role.session.get(step.path) : try await role.session.post(step.path, fields)
                    #expect(
                        answer.status == step.expected[index],
                        "\(role.label): \(step.method) \(step.path) answered \(answer.status.code), not \(step.expected[index].code)")
                    guard step.method == .post else { continue }
                    // Written to the audit log, allowed or refused, with who, what, which app and the answer.
                    let recorded = try await service.integers(
                        """
                        SELECT coalesce(app_id, 0) FROM audit_log
                        WHERE actor = \(role.actor) AND channel = 'console' AND action = \("POST \(step.path)")
                          AND status = \(Int(step.expected[index].code)) AND origin IS NOT NULL
                        ORDER BY id DESC LIMIT 1
                        """)
                    #expect(recorded.count == 1, "\(role.label): POST \(step.path) is not in the audit log")
                    // The app is the one in the path; a one-app re-queue names its app once done; a new app names itself.
                    var app = AuditMiddleware.appID(in: step.path)
                    if step.fields["app"] != nil, answer.status == .seeOther { app = a.app.id }
                    if step.path == "/dashboard/apps", answer.status == .ok {
                        #expect((recorded.first ?? 0) > b.app.id, "\(role.label): the new app is named")
                    } else {
                        #expect(recorded.first == (app ?? 0), "\(role.label): POST \(step.path) names app \(recorded.first ?? -1), not \(app ?? 0)")
                    }
                }
            }
            // Adding an operator is an owner's too.
            let added = try await roles[0].session.post(
                "/dashboard/operators",
                ["name": "new-\(UUID().uuidString.prefix(6).lowercased())", "role": "editor", "apps": "\(a.app.id)", "password": "a long enough password"])
            #expect(added.status == .seeOther)
            for role in roles[1...3] {
                let refusedAdd = try await role.session.post("/dashboard/operators", ["name": "nope", "role": "owner", "password": "a long enough password"])
                #expect(refusedAdd.status == .forbidden, "\(role.label) may not add operators")
            }
            // An admin or editor finds only their own apps' devices.
            for role in roles[1...2] {
                let found = try await role.session.page("/dashboard/search?q=bob")
                #expect(!found.contains("/dashboard/apps/\(b.app.id)/devices/"), "\(role.label) sees no device of app B")
                #expect(try await role.session.page("/dashboard/search?q=ann").contains("/dashboard/apps/\(a.app.id)/devices/"))
            }
            #expect(try await roles[3].session.page("/dashboard/search?q=bob").contains("/dashboard/apps/\(b.app.id)/devices/"))
            // The viewer's navigation offers no owner's pages.
            let viewerHome = try await roles[3].session.page("/dashboard")
            #expect(!viewerHome.contains("/dashboard/operators"))
            #expect(viewerHome.contains("/dashboard/queue"))
        }
    }

    @Test func aDisabledOperatorIsSignedOutAndCannotSignInAgain() async throws {
        try await withTestService { client, service in
            let account = try await ConsoleSession.addOperator(service, .viewer)
            let session = try await ConsoleSession.signIn(client, service, name: account.name, password: account.password)
            #expect(try await session.get("/dashboard").status == .ok)
            let owner = try await ConsoleSession.admin(client, service)
            let id = try #require(try await OperatorStore(client: service.postgres, logger: TestDatabase.logger).account(name: account.name)?.id)
            #expect(try await owner.post("/dashboard/operators/\(id)", ["role": "viewer", "disabled": "on"]).status == .seeOther)
            #expect(try await session.get("/dashboard").status == .seeOther, "the session ended")
            let again = try await ConsoleSession.attemptSignIn(client, ["name": account.name, "password": account.password])
            #expect(again.status == .unauthorized, "\(again.headers) \(String(buffer: again.body))")
            // A wrong password is refused as a wrong name is, and both are audited.
            let wrong = try await ConsoleSession.attemptSignIn(client, ["name": "nobody-\(UUID().uuidString.prefix(6))", "password": "x"])
            #expect(wrong.status == .unauthorized)
            #expect(
                try await service.integer(
                    "SELECT count(*) FROM audit_log WHERE actor = \("operator:\(account.name)") AND action = 'POST /dashboard/login' AND status = 401") == 1)
        }
    }
}
