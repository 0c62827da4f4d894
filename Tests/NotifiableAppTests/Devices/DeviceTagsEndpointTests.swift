import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// Tags on devices: set by the device on register/update, and by the app's backend through
/// PUT/PATCH /api/v1/device_tokens/:id/tags.
@Suite struct DeviceTagsEndpointTests {
    static let token = String(repeating: "7a", count: 32)

    static func tags(_ response: TestResponse) -> [String]? {
        response.json["tags"]?.arrayValue?.compactMap(\.stringValue)
    }

    /// Alice's device (`token`) registered by the device; `extra` as `Pipeline.registration` takes it.
    static func register(_ client: some TestClientProtocol, _ app: AppStore.CreatedApp, extra: String = "") async throws -> TestResponse {
        try await Pipeline.registration(client, app.deviceCredential, token: token, alias: "alice", extra: extra)
    }

    @Test func theDeviceSetsItsTagsOnRegisterAndUpdateAndAReRegistrationWithoutTagsKeepsThem() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let registered = try await Self.register(client, app, extra: #", "tags": ["lang:fr", "group:beta", "lang:fr"]"#)
            #expect(registered.status == .ok)
            #expect(Self.tags(registered) == ["group:beta", "lang:fr"])
            #expect(registered.json["platform_properties"]?["tags"] == nil)
            let id = try #require(registered.json["id"]?.intValue)

            // The SDKs re-register on every launch without tags: the backend's tags stay.
            let again = try await Self.register(client, app)
            #expect(Self.tags(again) == ["group:beta", "lang:fr"])

            let updated = try await client.signed(.patch, "/api/v1/device_tokens/\(id)", body: #"{"tags": ["vip"]}"#, as: app.deviceCredential)
            #expect(Self.tags(updated) == ["vip"])
            let listed = try await client.signed(.get, "/api/v1/device_tokens?user_alias=alice", as: app.deviceCredential)
            #expect(listed.json[0]?["tags"]?.arrayValue?.compactMap(\.stringValue) == ["vip"])

            let cleared = try await client.signed(.put, "/api/v1/device_tokens/\(id)", body: #"{"tags": null}"#, as: app.deviceCredential)
            #expect(Self.tags(cleared) == [])

            let bad = try await Self.register(client, app, extra: #", "tags": ["ok", "fine", "also:ok", "not ok"]"#)
            #expect(bad.status == .unprocessableContent)
            #expect(bad.errorCode == "invalid_tag")
            #expect(bad.errorField == "device_token.tags.3")
            let sixtyOne = (0...60).map { "\"t\($0)\"" }.joined(separator: ",")
            let tooMany = try await Self.register(client, app, extra: #", "tags": [\#(sixtyOne)]"#)
            #expect(tooMany.status == .unprocessableContent)
            #expect(tooMany.errorCode == "too_many_tags")
            #expect(tooMany.errorField == "device_token.tags")
        }
    }

    @Test func theBackendReplacesAddsAndRemovesTags() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let id = try #require(try await Self.register(client, app, extra: #", "tags": ["lang:en"]"#).json["id"]?.intValue)
            let server = app.serverCredential

            let replaced = try await client.signed(
                .put, "/api/v1/device_tokens/\(id)/tags", body: #"{"tags": ["username:alice", "group:beta", "group:beta"]}"#, as: server
            )
            #expect(replaced.status == .ok)
            #expect(Self.tags(replaced) == ["group:beta", "username:alice"])
            #expect(replaced.json["id"]?.intValue == id)
            #expect(replaced.json["user_alias"]?.stringValue == "alice")

            let edited = try await client.signed(
                .patch, "/api/v1/device_tokens/\(id)/tags", body: #"{"add": ["lang:fr", "group:beta"], "remove": ["username:alice", "never:had"]}"#,
                as: server
            )
            #expect(edited.status == .ok)
            #expect(Self.tags(edited) == ["group:beta", "lang:fr"])

            let stored = try await service.integer(
                "SELECT count(*) FROM devices WHERE id = \(id) AND tags = ARRAY['group:beta', 'lang:fr']::text[]"
            )
            #expect(stored == 1)

            let emptied = try await client.signed(.put, "/api/v1/device_tokens/\(id)/tags", body: #"{"tags": []}"#, as: server)
            #expect(Self.tags(emptied) == [])
        }
    }

    @Test func addingPastSixtyIsRefusedAndChangesNothing() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let id = try #require(try await Self.register(client, app).json["id"]?.intValue)
            let fiftyNine = (1...59).map { "\"t\($0)\"" }.joined(separator: ",")
            let set = try await client.signed(.put, "/api/v1/device_tokens/\(id)/tags", body: #"{"tags": [\#(fiftyNine)]}"#, as: app.serverCredential)
            #expect(Self.tags(set)?.count == 59)

            // One more fits (and one already held is no more); two more do not.
            let sixty = try await client.signed(.patch, "/api/v1/device_tokens/\(id)/tags", body: #"{"add": ["t1", "t60"]}"#, as: app.serverCredential)
            #expect(Self.tags(sixty)?.count == 60)
            let refused = try await client.signed(
                .patch, "/api/v1/device_tokens/\(id)/tags", body: #"{"add": ["t61"], "remove": ["nope"]}"#, as: app.serverCredential
            )
            #expect(refused.status == .unprocessableContent)
            #expect(refused.errorCode == "too_many_tags")
            #expect(refused.errorField == "add")
            #expect(try await service.integer("SELECT cardinality(tags) FROM devices WHERE id = \(id)") == 60)
        }
    }

    @Test(
        arguments: [
            ("PUT", #"{"tags": ["a", "b", "c", "semi;colon"]}"#, "invalid_tag", "tags.3"),
            ("PUT", #"{"tags": ["\#(String(repeating: "x", count: 121))"]}"#, "invalid_tag", "tags.0"),
            ("PUT", #"{"tags": [\#((0...60).map { "\"t\($0)\"" }.joined(separator: ","))]}"#, "too_many_tags", "tags"),
            ("PUT", #"{"add": ["a"]}"#, "unknown_field", "add"),
            ("PATCH", #"{"add": ["a", "b c"]}"#, "invalid_tag", "add.1"),
            ("PATCH", #"{"remove": [7]}"#, "invalid_type", "remove.0"),
            ("PATCH", #"{"add": ["a"], "remove": ["a"]}"#, "conflicting_tags", "remove"),
            ("PATCH", #"{}"#, "missing_field", "add"),
        ] as [(String, String, String, String)])
    func badBodiesAreNamed(method: String, body: String, code: String, field: String) async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let id = try #require(try await Self.register(client, app, extra: #", "tags": ["kept"]"#).json["id"]?.intValue)
            let response = try await client.signed(
                method == "PUT" ? .put : .patch, "/api/v1/device_tokens/\(id)/tags", body: body, as: app.serverCredential
            )
            #expect(response.status == .unprocessableContent, "\(String(buffer: response.body))")
            #expect(response.errorCode == code)
            #expect(response.errorField == field)
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(id) AND tags = ARRAY['kept']::text[]") == 1)
        }
    }

    @Test func malformedJSONIsA400() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let id = try #require(try await Self.register(client, app).json["id"]?.intValue)
            let response = try await client.signed(.put, "/api/v1/device_tokens/\(id)/tags", body: #"{"tags": ["#, as: app.serverCredential)
            #expect(response.status == .badRequest)
            #expect(response.errorCode == "malformed_json")
        }
    }

    @Test func deviceCredentialsAreRefusedAndAnotherAppsDeviceIsNotFound() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let other = try await service.createApp(name: "Other app")
            let id = try #require(try await Self.register(client, app, extra: #", "tags": ["kept"]"#).json["id"]?.intValue)

            for (method, body) in [(HTTPRequest.Method.put, #"{"tags": ["vip"]}"#), (.patch, #"{"add": ["vip"]}"#)] {
                let asDevice = try await client.signed(method, "/api/v1/device_tokens/\(id)/tags", body: body, as: app.deviceCredential)
                #expect(asDevice.status == .forbidden)
                #expect(asDevice.errorCode == "server_credentials_required")

                let otherApp = try await client.signed(method, "/api/v1/device_tokens/\(id)/tags", body: body, as: other.serverCredential)
                #expect(otherApp.status == .notFound)
                #expect(otherApp.errorCode == "not_found")

                let unknown = try await client.signed(method, "/api/v1/device_tokens/999999999/tags", body: body, as: app.serverCredential)
                #expect(unknown.status == .notFound)
                let unsigned = try await client.execute(uri: "/api/v1/device_tokens/\(id)/tags", method: method, body: ByteBuffer(string: body))
                #expect(unsigned.status == .unauthorized)
            }
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(id) AND tags = ARRAY['kept']::text[]") == 1)

            // An unregistered device is gone for these routes too.
            _ = try await client.signed(.delete, "/api/v1/device_tokens/\(id)", as: app.deviceCredential)
            let gone = try await client.signed(.put, "/api/v1/device_tokens/\(id)/tags", body: #"{"tags": []}"#, as: app.serverCredential)
            #expect(gone.status == .notFound)
        }
    }

    /// The database refuses what the API refuses, whatever path writes the row.
    @Test func theSchemaChecksTagsToo() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let id = try #require(try await Self.register(client, app).json["id"]?.intValue)
            try await service.postgres.query("UPDATE devices SET tags = ARRAY['ok', 'fine'] WHERE id = \(id)", logger: TestDatabase.logger)
            for bad in ["ARRAY['has space']", "ARRAY['']", "ARRAY[NULL]::text[]", "(SELECT array_agg('t' || n) FROM generate_series(1, 61) AS n)"] {
                do {
                    try await service.postgres.query(PostgresQuery(unsafeSQL: "UPDATE devices SET tags = \(bad) WHERE id = \(id)"), logger: TestDatabase.logger)
                    Issue.record("the database accepted tags = \(bad)")
                } catch let error as PSQLError {
                    #expect(error.serverInfo?[.sqlState] == "23514", "\(bad): \(String(reflecting: error))")  // check_violation
                }
            }
        }
    }
}
