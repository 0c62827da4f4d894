import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

@testable import NotifiableApp

/// Admin API keys act with their operator's role and apps: every admin route tried with an owner's,
/// an admin's and an editor's key for app A, a viewer's key and the admin token, against app A and
/// app B. A revoked, an expired and a disabled operator's key get 401, and the audit log names the
/// key's operator and the key for each change.
@Suite struct AdminKeysTests {
    enum Expected {
        /// Allowed: answered as the admin token's request was (not 401, 403, nor a 404 it did not get).
        case allowed
        case forbidden
        case notFound
    }

    @Test func eachRolesKeyMayDoWhatItsRoleMayOnItsAppsOnly() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let a = try await service.createApp(name: "Keys A").app.id
            let b = try await service.createApp(name: "Keys B").app.id
            let throwaways = [try await service.createApp(name: "T1").app.id, try await service.createApp(name: "T2").app.id]
            let keys = OperatorKeyStore(client: service.postgres, logger: TestDatabase.logger)
            let operators = OperatorStore(client: service.postgres, logger: TestDatabase.logger)
            var bearer = [service.configuration.adminToken ?? ""]
            var names = ["admin-token"]
            for (role, apps) in [(OperatorRole.owner, [Int64]()), (.admin, [a]), (.editor, [a]), (.viewer, [])] {
                let account = try await ConsoleSession.addOperator(service, role, apps: apps)
                let id = try #require(try await operators.account(name: account.name)?.id)
                bearer.append(try await keys.create(operatorID: id, label: "test \(role.rawValue)", expiresAt: nil).key)
                names.append("operator:\(account.name)")
            }
            // Roles in order: admin token, owner, admin of A, editor of A, viewer.
            let webhook = try await client.admin(.post, "/admin/apps/\(a)/webhooks", body: #"{"url": "https://example.com/k"}"#, service: service)
            let webhookID = try #require(webhook.json["id"]?.intValue)
            typealias Step = (route: String, method: HTTPRequest.Method, path: (Int) -> String, body: String, expected: [Expected])
            let (ok, no, hidden): (Expected, Expected, Expected) = (.allowed, .forbidden, .notFound)
            let steps: [Step] = [
                ("/admin/apps", .get, { _ in "/admin/apps" }, "", [ok, ok, ok, ok, ok]),
                ("/admin/apps", .post, { _ in "/admin/apps" }, #"{"name": "By a key"}"#, [ok, ok, no, no, no]),
                ("/admin/apps/:id", .get, { _ in "/admin/apps/\(a)" }, "", [ok, ok, ok, ok, ok]),
                ("/admin/apps/:id", .get, { _ in "/admin/apps/\(b)" }, "", [ok, ok, hidden, hidden, ok]),
                ("/admin/apps/:id", .patch, { _ in "/admin/apps/\(a)" }, #"{"name": "Keys A"}"#, [ok, ok, ok, no, no]),
                ("/admin/apps/:id", .patch, { _ in "/admin/apps/\(b)" }, #"{"name": "Keys B"}"#, [ok, ok, hidden, hidden, no]),
                ("/admin/apps/:id", .delete, { $0 < 2 ? "/admin/apps/\(throwaways[$0])" : "/admin/apps/\(a)" }, "", [ok, ok, no, no, no]),
                ("/admin/apps/:id/credentials/rotate", .post, { _ in "/admin/apps/\(a)/credentials/rotate" }, #"{"role": "device"}"#, [ok, ok, ok, no, no]),
                (
                    "/admin/apps/:id/credentials/rotate", .post, { _ in "/admin/apps/\(b)/credentials/rotate" }, #"{"role": "device"}"#,
                    [ok, ok, hidden, hidden, no]
                ),
                ("/admin/apps/:id/credentials/:access_id", .delete, { _ in "/admin/apps/\(a)/credentials/none" }, "", [ok, ok, ok, no, no]),
                ("/admin/apps/:id/user_tokens/rotate", .post, { _ in "/admin/apps/\(a)/user_tokens/rotate" }, "{}", [ok, ok, ok, no, no]),
                ("/admin/apps/:id/apns", .put, { _ in "/admin/apps/\(a)/apns" }, #"{"key_id": "bad"}"#, [ok, ok, ok, no, no]),
                ("/admin/apps/:id/apns", .put, { _ in "/admin/apps/\(b)/apns" }, #"{"key_id": "bad"}"#, [ok, ok, hidden, hidden, no]),
                ("/admin/apps/:id/apns", .get, { _ in "/admin/apps/\(a)/apns" }, "", [ok, ok, ok, ok, ok]),
                ("/admin/apps/:id/apns", .delete, { _ in "/admin/apps/\(a)/apns" }, "", [ok, ok, ok, no, no]),
                ("/admin/apps/:id/fcm", .put, { _ in "/admin/apps/\(a)/fcm" }, #"{"service_account": "{}"}"#, [ok, ok, ok, no, no]),
                ("/admin/apps/:id/fcm", .get, { _ in "/admin/apps/\(b)/fcm" }, "", [ok, ok, hidden, hidden, ok]),
                ("/admin/apps/:id/fcm", .delete, { _ in "/admin/apps/\(a)/fcm" }, "", [ok, ok, ok, no, no]),
                ("/admin/apps/:id/webpush", .put, { _ in "/admin/apps/\(a)/webpush" }, #"{"subject": "bad"}"#, [ok, ok, ok, no, no]),
                ("/admin/apps/:id/webpush", .put, { _ in "/admin/apps/\(b)/webpush" }, #"{"subject": "bad"}"#, [ok, ok, hidden, hidden, no]),
                ("/admin/apps/:id/webpush", .get, { _ in "/admin/apps/\(a)/webpush" }, "", [ok, ok, ok, ok, ok]),
                ("/admin/apps/:id/webpush", .delete, { _ in "/admin/apps/\(a)/webpush" }, "", [ok, ok, ok, no, no]),
                ("/admin/apps/:id/sandbox/pushes", .get, { _ in "/admin/apps/\(a)/sandbox/pushes" }, "", [ok, ok, ok, ok, ok]),
                ("/admin/apps/:id/sandbox/pushes", .get, { _ in "/admin/apps/\(b)/sandbox/pushes" }, "", [ok, ok, hidden, hidden, ok]),
                ("/admin/apps/:id/webhooks", .get, { _ in "/admin/apps/\(a)/webhooks" }, "", [ok, ok, ok, ok, ok]),
                ("/admin/apps/:id/webhooks", .post, { _ in "/admin/apps/\(a)/webhooks" }, #"{"url": "https://example.com/k2"}"#, [ok, ok, ok, no, no]),
                ("/admin/apps/:id/webhooks/:webhook_id/batches", .get, { _ in "/admin/apps/\(a)/webhooks/\(webhookID)/batches" }, "", [ok, ok, ok, ok, ok]),
                ("/admin/apps/:id/webhooks/:webhook_id/resume", .post, { _ in "/admin/apps/\(a)/webhooks/\(webhookID)/resume" }, "{}", [ok, ok, ok, no, no]),
                ("/admin/apps/:id/webhooks/:webhook_id", .delete, { _ in "/admin/apps/\(b)/webhooks/\(webhookID)" }, "", [ok, ok, hidden, hidden, no]),
                ("/admin/queue", .get, { _ in "/admin/queue" }, "", [ok, ok, no, no, ok]),
                ("/admin/deliveries/dead", .get, { _ in "/admin/deliveries/dead" }, "", [ok, ok, no, no, ok]),
                ("/admin/deliveries/dead", .get, { _ in "/admin/deliveries/dead?app_id=\(a)" }, "", [ok, ok, ok, ok, ok]),
                ("/admin/deliveries/dead", .get, { _ in "/admin/deliveries/dead?app_id=\(b)" }, "", [ok, ok, hidden, hidden, ok]),
                ("/admin/deliveries/dead/requeue", .post, { _ in "/admin/deliveries/dead/requeue" }, #"{"app_id": \#(a)}"#, [ok, ok, ok, no, no]),
                ("/admin/deliveries/dead/requeue", .post, { _ in "/admin/deliveries/dead/requeue" }, #"{"app_id": \#(b)}"#, [ok, ok, hidden, hidden, no]),
                ("/admin/deliveries/dead/requeue", .post, { _ in "/admin/deliveries/dead/requeue" }, "{}", [ok, ok, no, no, no]),
            ]
            // Every admin route is among them.
            let router = buildRouter(service.configuration, postgres: service.postgres, logger: TestDatabase.logger)
            let adminRoutes = Set(
                router.routes.filter { $0.path.description.hasPrefix("/admin") }
                    .map { "\($0.method.rawValue) \($0.path.description.replacingOccurrences(of: "{", with: ":").replacingOccurrences(of: "}", with: ""))" })
            #expect(Set(steps.map { "\($0.method.rawValue) \($0.route)" }) == adminRoutes, "every admin route is tried")

            for step in steps {
                var tokenStatus: HTTPResponse.Status?
                for (role, key) in bearer.enumerated() {
                    let answer = try await client.execute(
                        uri: step.path(role), method: step.method, headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                        body: step.body.isEmpty ? nil : ByteBuffer(string: step.body))
                    let label = "\(names[role]): \(step.method) \(step.path(role))"
                    if role == 0 { tokenStatus = answer.status }
                    switch step.expected[role] {
                    case .allowed:
                        #expect(answer.status != .unauthorized && answer.status != .forbidden, "\(label) answered \(answer.status.code)")
                        #expect(answer.status != .notFound || tokenStatus == .notFound, "\(label) answered 404")
                        // Each change a key makes is in the audit log under its operator, with the key.
                        if role > 0, step.method != .get, answer.status.code < 400 {
                            let recorded = try await service.integer(
                                """
                                SELECT count(*) FROM audit_log WHERE actor = \(names[role]) AND channel = 'admin-api'
                                  AND action = \("\(step.method.rawValue) \(step.path(role))") AND detail ->> 'api_key' IS NOT NULL
                                """)
                            #expect((recorded ?? 0) >= 1, "\(label) is in the audit log under its operator")
                        }
                    case .forbidden:
                        #expect(answer.status == .forbidden && answer.errorCode == "role_not_allowed", "\(label) answered \(answer.status.code)")
                    case .notFound:
                        #expect(answer.status == .notFound, "\(label) answered \(answer.status.code)")
                    }
                }
            }
            // A scoped key lists its own apps only.
            let listed = try await client.execute(uri: "/admin/apps", method: .get, headers: [.authorization: "Bearer \(bearer[2])"])
            #expect(listed.json["data"]?.arrayValue?.compactMap { $0["id"]?.intValue } == [a])

            // The audit log names the key's operator, and the key.
            let keyID = try #require(try await keys.list().first { $0.label == "test admin" }?.id)
            let audited = try await service.integer(
                """
                SELECT count(*) FROM audit_log WHERE actor = \(names[2]) AND channel = 'admin-api' AND detail ->> 'api_key' = \("\(keyID)")
                  AND action = \("PATCH /admin/apps/\(a)") AND status = 200
                """)
            #expect(audited == 1)
        }
    }

    @Test func revokedExpiredAndDisabledKeysAre401AndUnknownOnesAreThrottled() async throws {
        try await withTestService { client, service in
            let keys = OperatorKeyStore(client: service.postgres, logger: TestDatabase.logger)
            let operators = OperatorStore(client: service.postgres, logger: TestDatabase.logger)
            let account = try await ConsoleSession.addOperator(service, .owner)
            let id = try #require(try await operators.account(name: account.name)?.id)
            let live = try await keys.create(operatorID: id, label: "live", expiresAt: nil)
            let revoked = try await keys.create(operatorID: id, label: "revoked", expiresAt: nil)
            #expect(try await keys.revoke(id: revoked.record.id))
            let expired = try await keys.create(operatorID: id, label: "expired", expiresAt: Date().addingTimeInterval(-1))
            func status(_ key: String) async throws -> (HTTPResponse.Status, String?) {
                let answer = try await client.execute(uri: "/admin/queue", method: .get, headers: [.authorization: "Bearer \(key)"])
                return (answer.status, answer.errorCode)
            }
            #expect(try await status(live.key).0 == .ok)
            #expect(try await status(revoked.key) == (.unauthorized, "revoked_api_key"))
            #expect(try await status(expired.key) == (.unauthorized, "expired_api_key"))
            #expect(try await status(OperatorKey.generate()) == (.unauthorized, "invalid_admin_token"))
            #expect(try await keys.list(operatorID: id).first { $0.id == live.record.id }?.lastUsedAt != nil)
            _ = try await operators.update(id: id, disabled: true)
            #expect(try await status(live.key) == (.unauthorized, "operator_disabled"))
            // Only the digest is stored.
            #expect(try await service.integer("SELECT count(*) FROM operator_keys WHERE position(\(live.key) in digest::text) > 0") == 0)
        }
    }
}
