import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NotifiableApp
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing
import _CryptoExtras

/// The OpenAPI document at /openapi.yaml stays true: it describes exactly the routes the router
/// has, and real answers satisfy its schemas.
@Suite struct OpenAPITests {
    @Test func everyRouteIsDocumentedAndEveryDocumentedOperationIsRouted() throws {
        let configuration = try TestDatabase.serverConfiguration()
        let postgres = try makeDatabase(configuration, logger: TestDatabase.logger)
        let router = buildRouter(configuration, postgres: postgres, logger: TestDatabase.logger)
        // The dashboard's HTML pages are for browsers, not part of the API.
        let routed = Set(
            router.routes.filter { !$0.path.description.hasPrefix("/dashboard") }.map { route in
                let path = route.path.description.split(separator: "/", omittingEmptySubsequences: false)
                    .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
                return "\(route.method.rawValue) \(path)"
            })
        let documented = try OpenAPIConformance().operations
        #expect(routed.count > 30)
        #expect(routed.subtracting(documented).sorted() == [], "routes missing from the document")
        #expect(documented.subtracting(routed).sorted() == [], "documented operations no route serves")
    }

    /// Walks every endpoint (successes and the usual errors) and checks each answer against the document.
    @Test func realAnswersSatisfyTheDocumentsSchemas() async throws {
        let conformance = try OpenAPIConformance()
        try await withTestService(workers: true) { client, service in
            var checked: Set<String> = []
            @discardableResult
            func check(_ answer: TestResponse, _ method: String, _ uri: String) -> TestResponse {
                let problems = conformance.problems(method: method, path: uri, status: Int(answer.status.code), body: Array(answer.body.readableBytesView))
                #expect(problems == [], "\(method) \(uri) → \(answer.status.code): \(String(buffer: answer.body))")
                if let template = conformance.template(for: String(uri.split(separator: "?").first ?? "")) { checked.insert("\(method) \(template)") }
                return answer
            }
            func admin(_ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil) async throws -> TestResponse {
                check(try await client.admin(method, uri, body: body, service: service), method.rawValue, uri)
            }
            func api(_ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil, as credential: Credential) async throws -> TestResponse {
                check(try await client.signed(method, uri, body: body, as: credential), method.rawValue, uri)
            }

            for uri in ["/health/live", "/health/ready"] { check(try await client.execute(uri: uri, method: .get), "GET", uri) }
            let served = try await client.execute(uri: "/openapi.yaml", method: .get)
            #expect(Array(served.body.readableBytesView) == Array(try Data(contentsOf: OpenAPIConformance.documentURL)))
            check(served, "GET", "/openapi.yaml")
            check(try await client.execute(uri: "/openapi.json", method: .get), "GET", "/openapi.json")
            check(try await client.execute(uri: "/metrics", method: .get), "GET", "/metrics")

            let created = try await admin(.post, "/admin/apps", #"{"name": "Docs", "delivery_mode": "sandbox"}"#)
            let appID = try #require(created.json["id"]?.intValue)
            let device = Credential(.device, ofCreatedApp: created.json)
            let server = Credential(.server, ofCreatedApp: created.json)
            try await admin(.post, "/admin/apps", #"{"name": ""}"#)
            try await admin(.get, "/admin/apps")
            try await admin(.get, "/admin/apps/\(appID)")
            try await admin(.get, "/admin/apps/999999999")
            try await admin(.patch, "/admin/apps/\(appID)", #"{"name": "Docs 2"}"#)
            try await admin(.post, "/admin/apps/\(appID)/user_tokens/rotate")
            try await admin(.post, "/admin/apps/999999999/user_tokens/rotate")
            let rotated = try await admin(.post, "/admin/apps/\(appID)/credentials/rotate", #"{"role": "device", "grace_seconds": 3600}"#)
            try await admin(.delete, "/admin/apps/\(appID)/credentials/\(rotated.json["access_id"]?.stringValue ?? "")")
            let apnsKey = P256.Signing.PrivateKey().pemRepresentation
            let apns = #"{"key_id": "KEY1234567", "team_id": "TEAM123456", "bundle_id": "com.example.app", "private_key": \#(Self.quoted(apnsKey))}"#
            try await admin(.put, "/admin/apps/\(appID)/apns", apns)
            try await admin(.get, "/admin/apps/\(appID)/apns")
            try await admin(.delete, "/admin/apps/\(appID)/apns")
            let account = try JSONValue.object([
                "type": .string("service_account"), "project_id": .string("docs"), "client_email": .string("docs@docs.iam.gserviceaccount.com"),
                "private_key": .string(try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation),
            ])
            try await admin(.put, "/admin/apps/\(appID)/fcm", #"{"service_account": \#(Self.text(account))}"#)
            try await admin(.get, "/admin/apps/\(appID)")
            try await admin(.get, "/admin/apps/\(appID)/fcm")
            try await admin(.delete, "/admin/apps/\(appID)/fcm")
            try await admin(.put, "/admin/apps/\(appID)/fcm", #"{"service_account": {"project_id": "x"}}"#)
            try await api(.get, "/api/v1/web_push/vapid_public_key", as: device)
            try await admin(.put, "/admin/apps/\(appID)/webpush", #"{"subject": "mailto:docs@example.com"}"#)
            try await admin(.get, "/admin/apps/\(appID)/webpush")
            try await api(.get, "/api/v1/web_push/vapid_public_key", as: device)
            try await admin(.put, "/admin/apps/\(appID)/webpush", #"{"subject": "ftp://x"}"#)
            try await admin(.delete, "/admin/apps/\(appID)/webpush")
            let browser = P256.KeyAgreement.PrivateKey().publicKey.x963Representation
            try await api(
                .post, "/api/v1/device_tokens",
                #"{"provider": "webpush", "token": "https://fcm.googleapis.com/fcm/send/docs", "keys": {"p256dh": "\#(Base64URL.encode(browser))", "auth": "AAECAwQFBgcICQoLDA0ODw"}}"#,
                as: device)

            let registration =
                #"{"device_token": {"provider": "apns", "token": "\#(String(repeating: "d0", count: 32))", "user_alias": "ada", "language": "en"}}"#
            let registered = try await api(.post, "/api/v1/device_tokens", registration, as: device)
            let deviceID = try #require(registered.json["id"]?.intValue)
            try await api(.post, "/api/v1/device_tokens.json", #"{"provider": "fcm", "token": "docs-android", "user_alias": "ada"}"#, as: device)
            try await api(.post, "/api/v1/device_tokens", #"{"provider": "apns", "token": "zz"}"#, as: device)
            try await api(.get, "/api/v1/device_tokens?user_alias=ada", as: device)
            try await api(.get, "/api/v1/device_tokens.json?user_alias=ada", as: device)
            try await api(.patch, "/api/v1/device_tokens/\(deviceID)", #"{"name": "Ada's phone"}"#, as: device)
            try await api(.put, "/api/v1/device_tokens/\(deviceID)", #"{"country": "gb"}"#, as: device)
            try await api(.put, "/api/v1/device_tokens/\(deviceID)/tags", #"{"tags": ["group:beta", "lang:en"]}"#, as: server)
            try await api(.patch, "/api/v1/device_tokens/\(deviceID)/tags", #"{"add": ["vip"], "remove": ["lang:en"]}"#, as: server)
            for (method, body) in [(HTTPRequest.Method.patch, #"{"add": ["no way"]}"#), (.put, #"{"tags": "vip"}"#)] {
                try await api(method, "/api/v1/device_tokens/\(deviceID)/tags", body, as: server)
                try await api(method, "/api/v1/device_tokens/\(deviceID)/tags", body, as: device)
                try await api(method, "/api/v1/device_tokens/999999999/tags", #"{"tags": []}"#, as: server)
            }
            check(
                try await client.signed(.get, "/api/v1/device_tokens?user_alias=ada", as: Credential(role: .device, accessID: "nobody", secretKey: "x")), "GET",
                "/api/v1/device_tokens")

            let sent = try await api(.post, "/api/v1/notifications", #"{"title": "Docs", "message": "m", "user_aliases": ["ada"]}"#, as: server)
            let id = try #require(sent.json["id"]?.intValue)
            try await api(.post, "/api/v1/notifications", #"{"message": "m"}"#, as: server)
            try await api(.post, "/api/v1/notifications", #"{"message": "m", "tag_expression": "vip && !(lang:fr || group:alpha)"}"#, as: server)
            try await api(.post, "/api/v1/notifications", #"{"message": "m", "tag_expression": "vip && (lang:fr ||"}"#, as: server)
            try await api(.post, "/api/v1/notifications", #"{"message": "m", "all": true}"#, as: device)
            try await api(
                .post, "/api/v1/notifications/batch", #"{"notifications": [{"title": "One", "user_aliases": ["ada"]}, {"title": "Bad"}]}"#, as: server)
            try await api(.post, "/api/v1/notifications/batch", #"{"notifications": [{"title": "Bad"}]}"#, as: server)
            try await api(.post, "/api/v1/notifications/batch", #"{"notifications": []}"#, as: server)
            let activityToken = String(repeating: "ab", count: 32)
            try await api(.post, "/api/v1/device_tokens/\(deviceID)/live_activities", #"{"activity_id": "docs-1", "token": "\#(activityToken)"}"#, as: device)
            try await api(.post, "/api/v1/device_tokens/\(deviceID)/live_activities", #"{"activity_id": "docs-1", "token": "zz"}"#, as: device)
            try await api(.post, "/api/v1/device_tokens/999999999/live_activities", #"{"activity_id": "docs-1", "token": "\#(activityToken)"}"#, as: device)
            try await api(
                .post, "/api/v1/device_tokens/\(deviceID)/push_to_start_tokens", #"{"attributes_type": "Docs", "token": "\#(activityToken)"}"#, as: device)
            try await api(.post, "/api/v1/device_tokens/\(deviceID)/push_to_start_tokens", #"{"token": "\#(activityToken)"}"#, as: device)
            try await api(.post, "/api/v1/live_activities", #"{"event": "update", "activity_id": "docs-1", "content_state": {"n": 1}}"#, as: server)
            try await api(.post, "/api/v1/live_activities", #"{"event": "pause", "activity_id": "docs-1"}"#, as: server)
            try await api(.post, "/api/v1/live_activities", #"{"event": "update", "activity_id": "docs-1", "content_state": {}}"#, as: device)
            try await api(.post, "/api/v1/live_activities/docs-1/channel", #"{"message_storage": false}"#, as: server)
            try await api(.post, "/api/v1/live_activities/docs-1/channel", #"{"message_storage": 1}"#, as: server)
            try await api(.post, "/api/v1/live_activities/docs-1/channel", as: device)
            try await api(.get, "/api/v1/live_activities/docs-1", as: server)
            try await api(.delete, "/api/v1/device_tokens/\(deviceID)/live_activities/docs-1", as: device)
            try await api(.delete, "/api/v1/device_tokens/\(deviceID)/live_activities/a%01", as: device)
            try await api(.delete, "/api/v1/device_tokens/999999999/live_activities/docs-1", as: device)
            try await api(.delete, "/api/v1/device_tokens/\(deviceID)/push_to_start_tokens/Docs", as: device)
            try await api(.post, "/api/v1/live_activities", #"{"event": "end", "activity_id": "docs-1"}"#, as: server)
            try await api(.post, "/api/v1/live_activities", #"{"event": "end", "activity_id": "docs-1"}"#, as: server)
            try await api(.get, "/api/v1/live_activities/nothing", as: server)
            let settled = try await service.eventually {
                try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(id) AND state = 'sent'") == 2
            }
            #expect(settled)
            try await api(.get, "/api/v1/notifications", as: server)
            try await api(.get, "/api/v1/notifications/\(id)", as: server)
            try await api(.get, "/api/v1/notifications/\(id)/deliveries?state=sent", as: server)
            try await api(.post, "/api/v1/notifications/\(id)/delivered", #"{"device_token_id": \#(deviceID)}"#, as: device)
            try await api(.post, "/api/v1/notifications/\(id)/opened", #"{"device_token_id": "\#(deviceID)", "user": {"alias": "ada"}}"#, as: device)
            try await api(.post, "/api/v1/notifications/999999999/opened", #"{"device_token_id": 1}"#, as: device)
            try await admin(.get, "/admin/apps/\(appID)/sandbox/pushes?notification_id=\(id)")
            let webhook = try await admin(.post, "/admin/apps/\(appID)/webhooks", #"{"url": "http://127.0.0.1:9/hooks", "events": ["opened"]}"#)
            let webhookID = try #require(webhook.json["id"]?.intValue)
            try await admin(.post, "/admin/apps/\(appID)/webhooks", #"{"url": "ftp://example.com"}"#)
            try await admin(.post, "/admin/apps/\(appID)/webhooks", #"{"url": "#)
            try await admin(.post, "/admin/apps/999999999/webhooks", #"{"url": "https://example.com"}"#)
            try await admin(.get, "/admin/apps/\(appID)/webhooks")
            try await admin(.get, "/admin/apps/999999999/webhooks")
            try await admin(.get, "/admin/apps/\(appID)/webhooks/\(webhookID)/batches?limit=10")
            try await admin(.get, "/admin/apps/\(appID)/webhooks/\(webhookID)/batches?limit=0")
            try await admin(.post, "/admin/apps/\(appID)/webhooks/\(webhookID)/resume")
            try await admin(.post, "/admin/apps/\(appID)/webhooks/999999999/resume")
            try await admin(.delete, "/admin/apps/\(appID)/webhooks/\(webhookID)")
            try await admin(.delete, "/admin/apps/\(appID)/webhooks/\(webhookID)")
            try await api(.delete, "/api/v1/notifications/\(id)", as: server)
            try await api(.get, "/api/v1/notifications/999999999", as: server)
            let later = try await api(
                .post, "/api/v1/notifications", #"{"title": "Later", "all": true, "send_at": "\#(Date().addingTimeInterval(3600).ISO8601Format())"}"#,
                as: server)
            #expect(later.json["state"]?.stringValue == "scheduled")
            let morning = try await api(
                .post, "/api/v1/notifications", #"{"title": "Morning", "all": true, "send_at": "2099-01-01T08:00:00", "local_time": true}"#, as: server)
            #expect(morning.errorCode == "too_far_ahead")
            let rich = try await api(.post, "/api/v1/notifications", #"{"title": "Photo", "device_ids": [\#(deviceID)], "rich": true}"#, as: server)
            let richID = try #require(rich.json["id"]?.intValue)
            check(
                try await client.signed(.put, "/api/v1/notifications/\(richID)/content", bytes: [1, 2, 3], contentType: "image/png", as: server), "PUT",
                "/api/v1/notifications/\(richID)/content")
            check(
                try await client.signed(.put, "/api/v1/notifications/\(richID)/content", bytes: [1], contentType: "image/png", as: server), "PUT",
                "/api/v1/notifications/\(richID)/content")
            #expect(try await service.eventually { try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(richID)") == 1 })
            try await api(.get, "/api/v1/notifications/\(richID)/content?device_token_id=\(deviceID)", as: device)
            try await api(.get, "/api/v1/notifications/\(richID)/content?device_token_id=999999999", as: device)
            let stateful = try await api(.post, "/api/v1/notifications", #"{"title": "Kept", "user_aliases": ["ada"], "stateful": true}"#, as: server)
            let keptID = try #require(stateful.json["id"]?.intValue)
            let ada = try await client.userToken(for: "ada", as: server)
            func user(_ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil) async throws -> TestResponse {
                check(try await client.asUser(ada, method, uri, body: body), method.rawValue, uri)
            }
            try await user(.get, "/api/v1/me/notifications?read_state=unread&language=en")
            try await user(.get, "/api/v1/me/notifications/\(keptID)")
            try await user(.patch, "/api/v1/me/notifications/\(keptID)", #"{"read_state": "read", "device_token_id": \#(deviceID)}"#)
            try await user(.patch, "/api/v1/me/notifications/\(keptID)", #"{"read_state": "seen"}"#)
            try await user(.get, "/api/v1/me/changes?since=0&limit=1")
            try await user(.get, "/api/v1/me/changes?since=x")
            try await api(.get, "/api/v1/users/ada/notifications", as: server)
            try await api(.get, "/api/v1/notifications/\(keptID)", as: server)
            let signals = try await api(.get, "/api/v1/notifications/\(keptID)/deliveries?kind=sync", as: server)
            #expect(signals.json["data"]?.arrayValue?.map { $0["kind"]?.stringValue } == ["sync"], "one sync signal, to ada's other device")
            try await user(.delete, "/api/v1/me/notifications/\(keptID)?device_token_id=\(deviceID)")
            try await user(.get, "/api/v1/me/notifications/\(keptID)")
            check(try await client.asUser("not-a-token", .get, "/api/v1/me/changes"), "GET", "/api/v1/me/changes")
            try await api(.delete, "/api/v1/device_tokens/\(deviceID)", as: device)

            let minted = try await api(.post, "/api/v1/users/ada/tokens", #"{"ttl_seconds": 600}"#, as: server)
            try await api(.post, "/api/v1/users/ada/tokens", #"{"ttl_seconds": 1}"#, as: server)
            try await api(.post, "/api/v1/users/ada/tokens", as: device)
            try await api(.get, "/api/v1/users/ada/data", as: server)
            try await api(.get, "/api/v1/users/a%0Ab/data", as: server)
            try await api(.delete, "/api/v1/users/nobody", as: server)
            try await api(.delete, "/api/v1/users/nobody", as: device)
            try await admin(.patch, "/admin/apps/\(appID)", #"{"require_verified_alias": true}"#)
            try await api(.post, "/api/v1/device_tokens", registration, as: device)
            try await api(.get, "/api/v1/device_tokens?user_alias=ada", as: device)
            check(
                try await client.signed(.post, "/api/v1/device_tokens", body: registration, as: device, userToken: minted.json["token"]?.stringValue ?? ""),
                "POST", "/api/v1/device_tokens"
            )

            try await admin(.get, "/admin/queue")
            try await admin(.get, "/admin/deliveries/dead?app_id=\(appID)")
            try await admin(.post, "/admin/deliveries/dead/requeue", #"{"app_id": \#(appID)}"#)
            try await admin(.post, "/admin/deliveries/dead/requeue", #"{"delivery_ids": "all"}"#)
            try await admin(.delete, "/admin/apps/\(appID)")
            check(try await client.execute(uri: "/admin/queue", method: .get), "GET", "/admin/queue")

            // Every documented operation was exercised.
            #expect(conformance.operations.subtracting(checked).sorted() == [])
        }
    }

    static func quoted(_ text: String) -> String { Self.text(.string(text)) }

    static func text(_ value: JSONValue) -> String {
        String(decoding: (try? JSONEncoder().encode(value)) ?? Data(), as: UTF8.self)
    }

    /// The outage answer is documented once and referred to by every operation: an answer is checked
    /// against the shared response, and one that is not the documented error is caught.
    @Test func theSharedOutageAnswerIsCheckedThroughItsReference() throws {
        let conformance = try OpenAPIConformance()
        let outage = #"{"error": {"code": "database_unavailable", "message": "The service cannot reach its database for a moment."}}"#
        #expect(conformance.problems(method: "POST", path: "/api/v1/device_tokens", status: 503, body: Array(outage.utf8)) == [])
        #expect(conformance.problems(method: "POST", path: "/api/v1/device_tokens", status: 503, body: Array(#"{"down": true}"#.utf8)) != [])
    }
}
