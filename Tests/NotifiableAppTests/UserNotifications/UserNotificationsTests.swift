import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

/// Stateful notifications without workers: users' copies, their state, the change feed, and
/// who may see what.
@Suite struct UserNotificationsTests {
    static func sendStateful(
        _ client: some TestClientProtocol, _ server: Credential, to aliases: [String], title: String = "Hello", stateful: String = "true"
    ) async throws -> Int64 {
        let list = aliases.map { "\"\($0)\"" }.joined(separator: ", ")
        let response = try await client.signed(
            .post, "/api/v1/notifications", body: #"{"title": "\#(title)", "user_aliases": [\#(list)], "stateful": \#(stateful)}"#, as: server
        )
        #expect(response.status == .accepted, "\(String(buffer: response.body))")
        return try #require(response.json["id"]?.intValue, "\(String(buffer: response.body))")
    }

    /// Every change after `cursor`, page by page.
    static func feed(
        _ client: some TestClientProtocol, _ token: String, after cursor: String = "0", pageSize: Int = 100
    ) async throws -> (changes: [JSONValue], cursor: String) {
        var cursor = cursor
        var changes: [JSONValue] = []
        while true {
            let page = try await client.asUser(token, .get, "/api/v1/me/changes?since=\(cursor)&limit=\(pageSize)")
            try #require(page.status == .ok, "\(String(buffer: page.body))")
            changes += page.json["changes"]?.arrayValue ?? []
            cursor = try #require(page.json["next_cursor"]?.stringValue)
            if page.json["has_more"] != .bool(true) { return (changes, cursor) }
        }
    }

    @Test func aUsersCopyCarriesTheContentAndItsStateChangesAreFedAndCounted() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let id = try await Self.sendStateful(client, app.serverCredential, to: ["alice", "bob"], title: "Sale")
            let alice = try await client.userToken(for: "alice", as: app.serverCredential)

            let list = try await client.asUser(alice, .get, "/api/v1/me/notifications")
            #expect(list.status == .ok)
            let copy = try #require(list.json["data"]?[0])
            #expect(copy["id"]?.intValue == id)
            #expect(copy["title"]?.stringValue == "Sale")
            #expect(copy["read_state"]?.stringValue == "unread")
            #expect(copy["user_action_state"]?.stringValue == "no_interaction")
            let expires = try #require(copy["expires_at"]?.stringValue.flatMap { try? Date($0, strategy: .iso8601) })
            #expect(abs(expires.timeIntervalSinceNow - 30 * 24 * 3600) < 120, "the default life is 30 days")

            let read = try await client.asUser(alice, .patch, "/api/v1/me/notifications/\(id)", body: #"{"read_state": "read"}"#)
            #expect(read.status == .ok, "\(String(buffer: read.body))")
            #expect(read.json["read_state"]?.stringValue == "read")
            // Setting what is already set records nothing.
            _ = try await client.asUser(alice, .patch, "/api/v1/me/notifications/\(id)", body: #"{"read_state": "read"}"#)
            let dismissed = try await client.asUser(alice, .patch, "/api/v1/me/notifications/\(id)", body: #"{"user_action_state": "dismissed"}"#)
            #expect(dismissed.json["user_action_state"]?.stringValue == "dismissed")
            #expect(try await client.asUser(alice, .get, "/api/v1/me/notifications?read_state=unread").json["data"]?.arrayValue?.isEmpty == true)
            #expect(try await client.asUser(alice, .get, "/api/v1/me/notifications?read_state=read").json["data"]?.arrayValue?.count == 1)

            let (changes, _) = try await Self.feed(client, alice)
            #expect(changes.map { $0["kind"]?.stringValue ?? "" } == ["created", "updated", "updated"])
            #expect(changes.map { $0["cursor"]?.stringValue ?? "" } == ["1", "2", "3"])
            #expect(changes.last?["read_state"]?.stringValue == "read")
            #expect(changes.last?["user_action_state"]?.stringValue == "dismissed")

            // The notification counts its users' states; a deletion keeps the user's last state.
            #expect(try await client.asUser(alice, .delete, "/api/v1/me/notifications/\(id)").status == .noContent)
            #expect(try await client.asUser(alice, .get, "/api/v1/me/notifications/\(id)").status == .notFound)
            #expect(try await client.asUser(alice, .delete, "/api/v1/me/notifications/\(id)").status == .notFound)
            let notification = try await client.signed(.get, "/api/v1/notifications/\(id)", as: app.serverCredential).json
            #expect(notification["user_states"] == .object(["targeted": .integer(2), "read": .integer(1), "dismissed": .integer(1), "activated": .integer(0)]))
            let (afterDelete, _) = try await Self.feed(client, alice, after: "3")
            #expect(afterDelete.map { $0["kind"]?.stringValue ?? "" } == ["deleted"])

            // The app's backend sees bob's copy, still unread.
            let bobs = try await client.signed(.get, "/api/v1/users/bob/notifications", as: app.serverCredential)
            #expect(bobs.json["data"]?[0]?["id"]?.intValue == id)
            #expect(bobs.json["data"]?[0]?["read_state"]?.stringValue == "unread")
            #expect(try await client.signed(.get, "/api/v1/users/bob/notifications", as: app.deviceCredential).status == .forbidden)
        }
    }

    @Test func aUserTokenReachesOnlyItsOwnUsersNotifications() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let other = try await service.createApp(name: "Other app")
            let bobsID = try await Self.sendStateful(client, app.serverCredential, to: ["bob"])
            let alicesID = try await Self.sendStateful(client, app.serverCredential, to: ["alice"])
            let alice = try await client.userToken(for: "alice", as: app.serverCredential)
            let otherAppsBob = try await client.userToken(for: "bob", as: other.serverCredential)

            for token in [alice, otherAppsBob] {
                #expect(try await client.asUser(token, .get, "/api/v1/me/notifications/\(bobsID)").status == .notFound)
                #expect(try await client.asUser(token, .patch, "/api/v1/me/notifications/\(bobsID)", body: #"{"read_state": "read"}"#).status == .notFound)
                #expect(try await client.asUser(token, .delete, "/api/v1/me/notifications/\(bobsID)").status == .notFound)
            }
            let alicesList = try await client.asUser(alice, .get, "/api/v1/me/notifications")
            #expect(alicesList.json["data"]?.arrayValue?.compactMap { $0["id"]?.intValue } == [alicesID])
            #expect(try await client.asUser(otherAppsBob, .get, "/api/v1/me/notifications").json["data"]?.arrayValue?.isEmpty == true)
            let (bobsFeedInOtherApp, _) = try await Self.feed(client, otherAppsBob)
            #expect(bobsFeedInOtherApp.isEmpty)
            #expect(try await service.integer("SELECT count(*) FROM user_notifications WHERE notification_id = \(bobsID) AND read_state = 'unread'") == 1)

            // Without a user token, or with the app's credentials instead of one: 401.
            let unsigned = try await client.execute(uri: "/api/v1/me/notifications", method: .get, headers: [:], body: nil)
            #expect(unsigned.status == .unauthorized)
            #expect(try await client.signed(.get, "/api/v1/me/notifications", as: app.serverCredential).status == .unauthorized)
            #expect(try await client.asUser(alice + "x", .get, "/api/v1/me/notifications").errorCode == "invalid_user_token")
        }
    }

    @Test func listsPageNewestFirstAndARotatedKeyEndsTheUsersTokens() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            var ids: [Int64] = []
            for n in 0..<5 { ids.append(try await Self.sendStateful(client, app.serverCredential, to: ["gus"], title: "n\(n)")) }
            let gus = try await client.userToken(for: "gus", as: app.serverCredential)
            _ = try await client.asUser(gus, .patch, "/api/v1/me/notifications/\(ids[1])", body: #"{"read_state": "read"}"#)

            var seen: [Int64] = []
            var cursor: String?
            repeat {
                let page = try await client.asUser(gus, .get, "/api/v1/me/notifications?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""))
                seen += page.json["data"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
                cursor = page.json["next_cursor"]?.stringValue
            } while cursor != nil
            #expect(seen == ids.reversed())
            let unread = try await client.signed(.get, "/api/v1/users/gus/notifications?read_state=unread&limit=3", as: app.serverCredential).json
            #expect(unread["data"]?.arrayValue?.compactMap { $0["id"]?.intValue } == [ids[4], ids[3], ids[2]])
            let rest = try await client.signed(
                .get, "/api/v1/users/gus/notifications?read_state=unread&limit=3&cursor=\(unread["next_cursor"]?.stringValue ?? "")", as: app.serverCredential
            ).json
            #expect(rest["data"]?.arrayValue?.compactMap { $0["id"]?.intValue } == [ids[0]])

            // Rotating the app's user-token key ends every token it minted, on /me too.
            #expect(try await client.admin(.post, "/admin/apps/\(app.app.id)/user_tokens/rotate", service: service).status == .ok)
            let refused = try await client.asUser(gus, .get, "/api/v1/me/notifications")
            #expect(refused.status == .unauthorized)
            #expect(refused.errorCode == "invalid_user_token")
            let fresh = try await client.userToken(for: "gus", as: app.serverCredential)
            #expect(try await client.asUser(fresh, .get, "/api/v1/me/changes").status == .ok)
        }
    }

    @Test func badInputIsRefusedNamingTheField() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let server = app.serverCredential
            func send(_ body: String) async throws -> TestResponse { try await client.signed(.post, "/api/v1/notifications", body: body, as: server) }

            let withDevices = try await send(#"{"title": "x", "device_ids": [1], "stateful": true}"#)
            #expect(withDevices.status == .unprocessableContent)
            #expect(withDevices.errorCode == "stateful_needs_user_aliases")
            let tooLong = try await send(
                #"{"title": "x", "user_aliases": ["a"], "stateful": {"expires_at": "\#(Date().addingTimeInterval(31 * 86400).ISO8601Format())"}}"#)
            #expect(tooLong.errorField == "stateful.expires_at")
            #expect(try await send(#"{"title": "x", "user_aliases": ["a"], "stateful": "yes"}"#).errorField == "stateful")
            #expect(try await send(#"{"title": "x", "user_aliases": ["a"], "stateful": {"expiry": 1}}"#).errorField == "stateful.expiry")

            let id = try await Self.sendStateful(client, server, to: ["alice"])
            let alice = try await client.userToken(for: "alice", as: server)
            let bobsDevice =
                try await client.signed(
                    .post, "/api/v1/device_tokens", body: #"{"provider": "apns", "token": "\#(String(repeating: "ab", count: 32))", "user_alias": "bob"}"#,
                    as: app.deviceCredential
                ).json["id"]?.intValue ?? 0
            let cases: [(body: String, field: String)] = [
                (#"{"read_state": "seen"}"#, "read_state"),
                (#"{"user_action_state": "opened"}"#, "user_action_state"),
                (#"{"read_state": 1}"#, "read_state"),
                (#"{}"#, "read_state"),
                (#"{"read_state": "read", "colour": "red"}"#, "colour"),
                (#"{"read_state": "read", "device_token_id": \#(bobsDevice)}"#, "device_token_id"),
                (#"{"read_state": "read", "device_token_id": "twelve"}"#, "device_token_id"),
            ]
            for (body, field) in cases {
                let response = try await client.asUser(alice, .patch, "/api/v1/me/notifications/\(id)", body: body)
                #expect(response.status == .unprocessableContent, "\(body)")
                #expect(response.errorField == field, "\(body): \(String(buffer: response.body))")
            }
            #expect(try await client.asUser(alice, .patch, "/api/v1/me/notifications/\(id)", body: "{").status == .badRequest)
            #expect(try await client.asUser(alice, .get, "/api/v1/me/changes?since=abc").errorField == "since")
            #expect(try await client.asUser(alice, .get, "/api/v1/me/changes?since=99").errorCode == "invalid_cursor")
            #expect(try await client.asUser(alice, .get, "/api/v1/me/notifications?read_state=new").errorField == "read_state")
        }
    }

    @Test func anExpiredCopyLeavesTheListsAndIsFedAsExpired() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let soon = try await Self.sendStateful(client, app.serverCredential, to: ["alice"], stateful: #"{"ttl_seconds": 60}"#)
            let later = try await Self.sendStateful(client, app.serverCredential, to: ["alice"])
            let alice = try await client.userToken(for: "alice", as: app.serverCredential)
            #expect(try await client.asUser(alice, .get, "/api/v1/me/notifications").json["data"]?.arrayValue?.count == 2)
            let soonExpiry = try await service.integer(
                "SELECT extract(epoch FROM expires_at - created_at)::int8 FROM user_notifications WHERE notification_id = \(soon)")
            #expect(soonExpiry == 60)

            // Its minute passes (moved on by hand rather than waited for).
            try await service.postgres.query(
                "UPDATE user_notifications SET expires_at = now() - interval '1 second' WHERE notification_id = \(soon)", logger: TestDatabase.logger
            )
            let list = try await client.asUser(alice, .get, "/api/v1/me/notifications")
            #expect(list.json["data"]?.arrayValue?.compactMap { $0["id"]?.intValue } == [later])
            #expect(try await client.asUser(alice, .get, "/api/v1/me/notifications/\(soon)").status == .notFound)
            #expect(try await client.asUser(alice, .patch, "/api/v1/me/notifications/\(soon)", body: #"{"read_state": "read"}"#).status == .notFound)

            let (changes, _) = try await Self.feed(client, alice)
            #expect(
                changes.map { "\($0["kind"]?.stringValue ?? "") \($0["id"]?.intValue ?? 0)" } == ["created \(soon)", "created \(later)", "expired \(soon)"])
            #expect(try await service.integer("SELECT count(*) FROM user_notifications WHERE notification_id = \(soon)") == 0)
        }
    }

    @Test func maintenanceExpiresEveryonesCopiesAndPrunedCursorsAreToldToStartOver() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let id = try await Self.sendStateful(client, app.serverCredential, to: ["alice", "bob", "carol"])
            try await service.postgres.query(
                "UPDATE user_notifications SET expires_at = now() - interval '1 second' WHERE user_alias <> 'carol'", logger: TestDatabase.logger)
            let store = UserNotificationStore(client: service.postgres, logger: TestDatabase.logger)
            #expect(try await store.expire(batchSize: 1) == 2)
            #expect(try await store.expire() == 0)
            #expect(try await service.integer("SELECT count(*) FROM user_notification_changes WHERE kind = 'expired' AND notification_id = \(id)") == 2)
            #expect(try await service.integer("SELECT max(seq) FROM user_notification_changes WHERE user_alias = 'bob'") == 2)

            // Changes older than the retention are pruned; a cursor from before them is refused with 410.
            try await service.postgres.query(
                "UPDATE user_notification_changes SET changed_at = now() - interval '40 days' WHERE user_alias = 'bob' AND seq = 1",
                logger: TestDatabase.logger
            )
            #expect(try await store.pruneChanges() == 1)
            let bob = try await client.userToken(for: "bob", as: app.serverCredential)
            let stale = try await client.asUser(bob, .get, "/api/v1/me/changes?since=0")
            #expect(stale.status == .gone)
            #expect(stale.errorCode == "cursor_expired")
            let (rest, _) = try await Self.feed(client, bob, after: "1")
            #expect(rest.map { $0["kind"]?.stringValue ?? "" } == ["expired"])
        }
    }

    /// 1,000 changes from 8 concurrent devices to 40 notifications, with a reader following the
    /// feed meanwhile and the server restarted halfway: the feed holds exactly the changes made,
    /// numbered 1…n with no gap and no repeat, each notification's in the order its device made them.
    @Test func theChangeFeedIsExactUnderConcurrencyAndAcrossARestart() async throws {
        let writers = 8, notificationsPerWriter = 5, changesPerWriter = 125
        let alias = "feed-\(UInt32.random(in: 0...UInt32.max))"
        let (ids, token) = try await withTestService { client, service in
            let app = try await service.createApp()
            var ids: [Int64] = []
            for n in 0..<(writers * notificationsPerWriter) {
                ids.append(try await Self.sendStateful(client, app.serverCredential, to: [alias], title: "n\(n)"))
            }
            return (ids, try await client.userToken(for: alias, as: app.serverCredential))
        }
        // What each writer did that changed something, per notification, in order.
        let expected = Expected()
        var followed: [JSONValue] = []
        var cursor = "0"
        for half in 0..<2 {
            // A new service over the same database each half: the feed and its cursors outlive a restart.
            (followed, cursor) = try await withTestService { [followed, cursor] client, _ in
                var followed = followed, cursor = cursor
                let finished = Flag()
                let writing = Task {
                    defer { finished.set() }
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for writer in 0..<writers {
                            group.addTask {
                                // Seeded, so each writer's choices are the same on every run.
                                var random = SplitMix64(seed: UInt64(writer * 2 + half))
                                let mine = Array(ids[(writer * notificationsPerWriter)..<((writer + 1) * notificationsPerWriter)])
                                for _ in 0..<(changesPerWriter / 2) {
                                    let id = mine[Int(random.next() % UInt64(mine.count))]
                                    let read = random.next() % 2 == 0 ? "read" : "unread"
                                    let action = ["no_interaction", "dismissed", "activated"][Int(random.next() % 3)]
                                    let response = try await client.asUser(
                                        token, .patch, "/api/v1/me/notifications/\(id)", body: #"{"read_state": "\#(read)", "user_action_state": "\#(action)"}"#
                                    )
                                    try #require(response.status == .ok, "\(String(buffer: response.body))")
                                    expected.record(id: id, read: read, action: action)
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                }
                // Follow the feed while the writers write.
                while !finished.isSet {
                    let page = try await Self.feed(client, token, after: cursor, pageSize: 37)
                    followed += page.changes
                    cursor = page.cursor
                    try await Task.sleep(for: .milliseconds(20))
                }
                try await writing.value
                let last = try await Self.feed(client, token, after: cursor, pageSize: 37)
                return (followed + last.changes, last.cursor)
            }
        }
        let seqs = followed.compactMap { $0["cursor"]?.stringValue.flatMap { Int64($0) } }
        #expect(seqs == Array(1...Int64(seqs.count)), "the followed feed has a gap or a repeat")
        let created = followed.filter { $0["kind"]?.stringValue == "created" }.compactMap { $0["id"]?.intValue }
        #expect(created == ids)
        let updates = followed.filter { $0["kind"]?.stringValue == "updated" }
        #expect(updates.count == expected.changeCount, "every effective change is fed once")
        for id in ids {
            let fed = updates.filter { $0["id"]?.intValue == id }.map { "\($0["read_state"]?.stringValue ?? "") \($0["user_action_state"]?.stringValue ?? "")" }
            #expect(fed == expected.states(of: id), "notification \(id)")
        }
        #expect(expected.changeCount > 500, "most of the 1,000 requests changed something")
        // A fresh read of the whole feed says the same as the one followed through the restart.
        let whole = try await withTestService { client, _ in try await Self.feed(client, token).changes }
        #expect(whole == followed)
    }
}

/// The changes the writers made: per notification, each new state in order (a request that set
/// what was already set changes nothing and is not counted).
private final class Expected: @unchecked Sendable {
    private let lock = NSLock()
    private var current: [Int64: String] = [:]
    private var sequences: [Int64: [String]] = [:]

    func record(id: Int64, read: String, action: String) {
        lock.lock()
        defer { lock.unlock() }
        let state = "\(read) \(action)"
        guard (current[id] ?? "unread no_interaction") != state else { return }
        current[id] = state
        sequences[id, default: []].append(state)
    }

    var changeCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return sequences.values.map(\.count).reduce(0, +)
    }
    func states(of id: Int64) -> [String] {
        lock.lock()
        defer { lock.unlock() }
        return sequences[id] ?? []
    }
}

/// Set once, read from anywhere.
private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() {
        lock.lock()
        value = true
        lock.unlock()
    }
    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
