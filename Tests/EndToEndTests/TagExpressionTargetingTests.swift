import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// Tag expressions through POST /api/v1/notifications and the fan-out, against a seeded
/// population: which devices get a delivery.
@Suite struct TagExpressionTargetingTests {
    /// Registers a device the way an app does, tags included; returns its id.
    static func register(
        _ client: some TestClientProtocol, _ app: AppStore.CreatedApp, _ n: Int, alias: String? = nil, tags: [String]
    ) async throws -> Int64 {
        let tagList = tags.map { "\"\($0)\"" }.joined(separator: ", ")
        return try await Pipeline.register(
            client, app.deviceCredential, token: Pipeline.token(0x7A6_000 + n), alias: alias, extra: #", "tags": [\#(tagList)]"#
        )
    }

    static func targeted(_ service: TestService, _ notificationID: Int64) async throws -> Set<Int64> {
        let rows = try await service.postgres.query(
            "SELECT device_id FROM deliveries WHERE notification_id = \(notificationID)", logger: TestDatabase.logger
        )
        var ids: Set<Int64> = []
        for try await id in rows.decode(Int64.self) { ids.insert(id) }
        return ids
    }

    static func quoted(_ text: String) -> String {
        String(decoding: try! JSONEncoder().encode(text), as: UTF8.self)
    }

    @Test func expressionsReachExactlyTheDevicesWhoseTagsSatisfyThem() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            var devices: [String: Int64] = [:]
            devices["alice"] = try await Self.register(client, app, 1, tags: ["username:alice", "group:beta", "lang:en"])
            devices["bob"] = try await Self.register(client, app, 2, tags: ["username:bob", "group:beta", "lang:fr"])
            devices["carol"] = try await Self.register(client, app, 3, alias: "carol", tags: ["username:carol", "lang:fr"])
            devices["dave"] = try await Self.register(client, app, 4, tags: ["username:dave", "group:alpha", "lang:de"])
            devices["erin"] = try await Self.register(client, app, 5, tags: [])
            devices["frank"] = try await Self.register(client, app, 6, tags: ["group:alpha", "group:beta", "lang:en", "OR"])
            // Tags that read as SQL or as operators elsewhere are matched as the literal strings they are.
            devices["gina"] = try await Self.register(client, app, 7, tags: ["select", "true", "--", "x:1-1", "#1"])
            // Neither an unregistered device nor another app's device is ever reached.
            let gone = try await Self.register(client, app, 8, tags: ["group:beta", "group:alpha", "lang:en"])
            _ = try await client.signed(.delete, "/api/v1/device_tokens/\(gone)", as: app.deviceCredential)
            let otherApp = try await service.createApp(name: "Other")
            _ = try await Self.register(client, otherApp, 9, tags: ["group:beta", "group:alpha", "lang:en", "select"])

            let table: [(expression: String, expected: Set<String>)] = [
                ("group:beta", ["alice", "bob", "frank"]),
                ("!group:beta", ["carol", "dave", "erin", "gina"]),
                ("(username:alice || group:beta) && !lang:fr", ["alice", "frank"]),
                ("group:beta && group:alpha", ["frank"]),
                ("group:beta || group:alpha && lang:de", ["alice", "bob", "dave", "frank"]),
                ("(group:beta || group:alpha) && lang:de", ["dave"]),
                ("!(lang:en || lang:fr)", ["dave", "erin", "gina"]),
                ("!!lang:en", ["alice", "frank"]),
                ("!lang:en && !lang:fr && !lang:de", ["erin", "gina"]),
                ("username:alice || username:bob || username:nobody", ["alice", "bob"]),
                ("OR", ["frank"]),
                ("select && true", ["gina"]),
                ("-- || x:1-1 || #1", ["gina"]),
                ("lang:EN", []),  // tags are compared exactly
                ("group", []),  // a tag, not a prefix
                ("nobody:has-this", []),
            ]
            var sent: [(String, Set<String>, Int64)] = []
            for (expression, expected) in table {
                let id = try await Pipeline.send(
                    client, app.serverCredential, #"{"message": "m", "tag_expression": \#(Self.quoted(expression))}"#
                )
                sent.append((expression, expected, id))
            }
            // Unioned with the other rules, like them: carol by alias, dave and frank by tags.
            let union = try await Pipeline.send(
                client, app.serverCredential, #"{"message": "m", "user_aliases": ["carol"], "tag_expression": "group:alpha"}"#
            )
            sent.append(("user_aliases carol + group:alpha", ["carol", "dave", "frank"], union))
            // All: every device, whatever the expression says.
            let all = try await Pipeline.send(client, app.serverCredential, #"{"message": "m", "all": true, "tag_expression": "nobody"}"#)
            sent.append(("all + nobody", Set(devices.keys), all))

            try await Pipeline.fanOut(service)
            for (expression, expected, id) in sent {
                let reached = try await Self.targeted(service, id)
                #expect(reached == Set(expected.map { devices[$0]! }), "\(expression): \(reached.sorted()) by \(devices)")
            }
        }
    }

    /// An audience spread thinly over the id space, and a dense one beside it: windows that find
    /// nothing move on and widen, full batches stop at their last id, and every device is
    /// reached once.
    @Test func aSparseAudienceAcrossManyWindowsIsReachedWholeAndOnce() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            var rare: Set<Int64> = []
            // Ids as another app's devices would leave them in a shared database; the first windows
            // end at 65,536 and 196,608 (65,536 ids, then twice as many), so devices sit on both
            // sides of those edges.
            for (n, id) in [17, 65_536, 65_537, 196_608, 196_609, 300_000, 2_400_000].enumerated() {
                try await service.postgres.query("SELECT setval('devices_id_seq', \(id - 1))", logger: TestDatabase.logger)
                let registered = try await Self.register(client, app, 100 + n, tags: ["rare"])
                #expect(registered == Int64(id))
                rare.insert(registered)
            }
            try await service.insertDevices(appID: app.app.id, count: 450, tokenSeed: 0x7A6D)
            try await service.postgres.query(
                "UPDATE devices SET tags = ARRAY['dense'] WHERE app_id = \(app.app.id) AND tags = '{}' AND id % 3 <> 0",
                logger: TestDatabase.logger
            )
            let dense = try await Self.ids(service, "SELECT id FROM devices WHERE app_id = \(app.app.id) AND 'dense' = ANY(tags)")
            #expect(dense.count == 300)

            let rareID = try await Pipeline.send(client, app.serverCredential, #"{"message": "m", "tag_expression": "rare"}"#)
            let denseID = try await Pipeline.send(client, app.serverCredential, #"{"message": "m", "tag_expression": "dense || rare"}"#)
            let noneID = try await Pipeline.send(client, app.serverCredential, #"{"message": "m", "tag_expression": "!dense && !rare"}"#)
            try await Pipeline.fanOut(service)

            #expect(try await Self.targeted(service, rareID) == rare)
            #expect(try await Self.targeted(service, denseID) == rare.union(dense))
            #expect(try await Self.targeted(service, noneID).count == 150)
            #expect(
                try await service.integer(
                    "SELECT count(*) FROM notifications WHERE id IN (\(rareID), \(denseID), \(noneID)) AND state = 'fanned_out'"
                ) == 3)
        }
    }

    static func ids(_ service: TestService, _ query: PostgresQuery) async throws -> Set<Int64> {
        var ids: Set<Int64> = []
        for try await id in try await service.postgres.query(query, logger: TestDatabase.logger).decode(Int64.self) { ids.insert(id) }
        return ids
    }

    /// Quotes, semicolons and the like never reach SQL: the grammar refuses them where they stand,
    /// and nothing is stored.
    @Test(arguments: [
        ("beta' OR '1'='1", 5),
        ("beta\" OR 1=1", 5),
        ("beta; DROP TABLE devices; --", 5),
        ("beta) OR (1=1", 5),
        ("x:1=1", 4),
        ("beta && $1", 9),
    ])
    func injectionAttemptsAreRefusedWithTheirPosition(expression: String, position: Int) async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let response = try await client.signed(
                .post, "/api/v1/notifications", body: #"{"message": "m", "tag_expression": \#(Self.quoted(expression))}"#, as: app.serverCredential
            )
            #expect(response.status == .unprocessableContent)
            #expect(response.errorCode == "invalid_tag_expression")
            #expect(response.errorField == "tag_expression")
            let message = try #require(response.json["error"]?["message"]?.stringValue)
            #expect(message.hasPrefix("Invalid tag expression at position \(position): "), "\(message)")
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 0)
        }
    }

    @Test func capsAreNamedInTheAnswer() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let cases: [(String, String)] = [
                (String(repeating: "a", count: 1_025), "an expression is at most 1024"),
                ((1...51).map { "t\($0)" }.joined(separator: " || "), "an expression holds at most 50"),
                (String(repeating: "(", count: 17) + "a" + String(repeating: ")", count: 17), "at most 16"),
                ("(group:beta || lang:fr) && ", "at position 28: expected a tag, '!' or '(' after '&&', but the expression ends"),
            ]
            for (expression, expected) in cases {
                let response = try await client.signed(
                    .post, "/api/v1/notifications", body: #"{"message": "m", "tag_expression": \#(Self.quoted(expression))}"#, as: app.serverCredential
                )
                #expect(response.status == .unprocessableContent)
                #expect(response.errorCode == "invalid_tag_expression")
                #expect(response.json["error"]?["message"]?.stringValue?.contains(expected) == true, "\(String(buffer: response.body))")
            }
        }
    }
}
