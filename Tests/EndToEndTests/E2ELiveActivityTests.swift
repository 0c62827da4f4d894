import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

/// Live Activities end to end: devices register their activities' tokens, the backend starts,
/// updates and ends an activity, and the fake APNs receives each push as ActivityKit needs it
/// (docs/compatibility.md §12), in order, through the same queue as any push.
@Suite struct E2ELiveActivityTests {
    static func event(_ client: some TestClientProtocol, _ credential: Credential, _ body: String) async throws -> TestResponse {
        try await client.signed(.post, "/api/v1/live_activities", body: body, as: credential)
    }

    static func aps(_ push: AcceptedPush) throws -> JSONValue? { try JSONValue.decode(push.payload)["aps"] }

    @Test func startedUpdatedAHundredTimesAtOnceAndEndedItArrivesInOrderWithExactCounts() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let follower = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xF011), alias: "fan")
                let starter = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x57A7), alias: "new-fan")
                let activityToken = Pipeline.token(0xAC71), startToken = Pipeline.token(0x5747)
                let registered = try await client.signed(
                    .post, "/api/v1/device_tokens/\(follower)/live_activities",
                    body: #"{"activity_id": "match-7", "token": "\#(activityToken.uppercased())", "attributes_type": "MatchAttributes"}"#,
                    as: app.deviceCredential)
                #expect(registered.status == .ok, "\(String(buffer: registered.body))")
                #expect(registered.json["token"]?.stringValue == activityToken)
                let pushToStart = try await client.signed(
                    .post, "/api/v1/device_tokens/\(starter)/push_to_start_tokens",
                    body: #"{"attributes_type": "MatchAttributes", "token": "\#(startToken)"}"#, as: app.deviceCredential)
                #expect(pushToStart.status == .ok)

                // Started on the second fan's phone through its push-to-start token.
                let started = try await Self.event(
                    client, app.serverCredential,
                    #"""
                    {"event": "start", "activity_id": "match-7", "attributes_type": "MatchAttributes", "attributes": {"home": "A", "away": "B"},
                     "content_state": {"n": 0}, "alert": {"title": "Kick-off", "body": "A v B"}, "user_aliases": ["new-fan"]}
                    """#)
                #expect(started.status == .accepted, "\(String(buffer: started.body))")
                #expect(started.json["devices"]?.intValue == 1)
                let notificationID = try #require(started.json["notification_id"]?.intValue)
                let startPush = try #require(try await Self.first(gateway, startToken, service))
                #expect(startPush.headers["apns-topic"] == "com.example.app.push-type.liveactivity")
                #expect(startPush.headers["apns-push-type"] == "liveactivity")
                #expect(try Self.aps(startPush)?["event"]?.stringValue == "start")
                #expect(try Self.aps(startPush)?["attributes-type"]?.stringValue == "MatchAttributes")

                // A hundred updates from four backend requests at a time.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for lane in 0..<4 {
                        group.addTask {
                            for n in 1...25 {
                                let response = try await Self.event(
                                    client, app.serverCredential,
                                    #"{"event": "update", "activity_id": "match-7", "content_state": {"n": \#(lane * 100 + n)}}"#)
                                #expect(response.status == .accepted)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                let ended = try await Self.event(client, app.serverCredential, #"{"event": "end", "activity_id": "match-7", "content_state": {"n": -1}}"#)
                #expect(ended.status == .accepted)
                #expect(try await Pipeline.settled(service, notificationID))

                // What the follower's phone got, in arrival order: timestamps never go back, and the
                // states are exactly those the database sent, in the order they were accepted.
                let received = gateway.pushes(to: activityToken).sorted { $0.receivedAt < $1.receivedAt }
                let timestamps = try received.map { try #require(try Self.aps($0)?["timestamp"]?.intValue) }
                #expect(timestamps == timestamps.sorted())
                let states = try received.map { try #require(try Self.aps($0)?["content-state"]?["n"]?.intValue) }
                let sentInOrder = try await service.integers(
                    """
                    SELECT (content -> 'live_activity' -> 'content_state' ->> 'n')::int8 FROM deliveries
                    WHERE notification_id = \(notificationID) AND push_token = \(activityToken) AND state = 'sent' ORDER BY id
                    """)
                #expect(states == sentInOrder)
                // Each backend request waited for the one before it: within a lane the phone sees its states rise.
                for lane in 0..<4 {
                    let seen = states.filter { $0 / 100 == Int64(lane) && $0 > 0 }
                    #expect(seen == seen.sorted(), "lane \(lane): \(seen)")
                }
                #expect(states.last == -1, "the end comes last")
                #expect(try received.last.flatMap { try Self.aps($0)?["event"]?.stringValue } == "end")

                // Its counts are a recount of its pushes; every update is either sent or superseded.
                let summary = try await client.signed(.get, "/api/v1/live_activities/match-7", as: app.serverCredential)
                let counts = try #require(summary.json["deliveries"]?.objectValue)
                let total = try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(notificationID)")
                #expect(counts.values.compactMap(\.intValue).reduce(0, +) == total)
                #expect(counts["sent"]?.intValue == Int64(received.count + 1), "the start too")
                #expect(Set(counts.keys).isSubset(of: ["sent", "cancelled"]), "\(counts)")
                #expect(summary.json["state"]?.stringValue == "ended")
                #expect(summary.json["tokens"]?.intValue == 0, "an ended activity's tokens are dropped")
                // The notification's kept counters count the activity's pushes as the summary does:
                // what the gateway took is `sent`, what a newer event replaced is `cancelled`.
                let kept = try await service.keptCounters(of: notificationID)
                #expect(kept == (try await service.recountedCounters(of: notificationID)))
                #expect(kept.sent == Int64(received.count + 1) && kept.targeted == total, "\(kept)")
                #expect(kept.cancelled == (counts["cancelled"]?.intValue ?? 0))
                let listed = try await client.signed(.get, "/api/v1/notifications/\(notificationID)", as: app.serverCredential)
                #expect(listed.json["counters"]?["sent"]?.intValue == kept.sent, "\(listed.json)")

                let late = try await Self.event(client, app.serverCredential, #"{"event": "update", "activity_id": "match-7", "content_state": {"n": 9}}"#)
                #expect(late.status == .conflict)
                #expect(late.json["error"]?["code"]?.stringValue == "activity_ended")
                // Nor does an ended activity take a new token, which would never hear of its end.
                let lateToken = try await client.signed(
                    .post, "/api/v1/device_tokens/\(starter)/live_activities", body: #"{"activity_id": "match-7", "token": "\#(Pipeline.token(0x1A7E))"}"#,
                    as: app.deviceCredential)
                #expect(lateToken.status == .conflict)
                // A start names a new activity: starting one again would show it twice.
                let start = #"""
                    {"event": "start", "activity_id": "match-8", "attributes_type": "MatchAttributes", "attributes": {}, "content_state": {},
                     "alert": {"title": "t"}, "user_aliases": ["new-fan"]}
                    """#
                #expect(try await Self.event(client, app.serverCredential, start).status == .accepted)
                let again = try await Self.event(client, app.serverCredential, start)
                #expect(again.status == .conflict)
                #expect(again.json["error"]?["code"]?.stringValue == "activity_exists")
            }
        }
    }

    /// A Flutter or React Native iPhone registers through Firebase: its activity's events go to FCM,
    /// addressed to the device's FCM token, with the activity's token as `apns.live_activity_token`
    /// (Firebase, "Get started with Live Activity"); an Android phone cannot follow an activity.
    @Test func anIPhoneOnFirebaseGetsItsActivitysEventsThroughFCM() async throws {
        try await withFakeFCM { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectFCM(appID: app.app.id, to: gateway)
                let fcmToken = "fcm-iphone:APA91b" + String(repeating: "l", count: 40)
                let registered = try await Pipeline.registration(
                    client, app.deviceCredential, provider: "fcm", token: fcmToken, alias: "fl", extra: #", "platform": "ios""#)
                let device = try #require(registered.json["id"]?.intValue)
                let android = try await Pipeline.registration(
                    client, app.deviceCredential, provider: "fcm", token: "fcm-android:APA91b" + String(repeating: "d", count: 40), alias: "fl")
                let androidID = try #require(android.json["id"]?.intValue)
                let activityToken = Pipeline.token(0xF1A)
                let token = try await client.signed(
                    .post, "/api/v1/device_tokens/\(device)/live_activities", body: #"{"activity_id": "tram-3", "token": "\#(activityToken)"}"#,
                    as: app.deviceCredential)
                #expect(token.status == .ok, "\(String(buffer: token.body))")
                let refused = try await client.signed(
                    .post, "/api/v1/device_tokens/\(androidID)/live_activities", body: #"{"activity_id": "tram-3", "token": "\#(activityToken)"}"#,
                    as: app.deviceCredential)
                #expect(refused.status == .unprocessableContent && refused.errorCode == "not_on_apns")

                let event = try await Self.event(
                    client, app.serverCredential, #"{"event": "update", "activity_id": "tram-3", "content_state": {"stop": "Opera"}, "priority": "high"}"#)
                let notificationID = try #require(event.json["notification_id"]?.intValue)
                #expect(try await Pipeline.settled(service, notificationID))
                let message = try #require(gateway.messages(to: fcmToken).first)
                let apns = try #require(message.apns)
                #expect(apns["live_activity_token"] == .string(activityToken))
                #expect(apns["headers"]?.objectValue?["apns-priority"] == .string("10"))
                let payload = try #require(apns["payload"]?.objectValue)
                #expect(payload["n_id"] == .integer(notificationID))
                #expect(payload["aps"]?.objectValue?["event"] == .string("update"))
                #expect(payload["aps"]?.objectValue?["content-state"] == .object(["stop": .string("Opera")]))
                #expect(payload["aps"]?.objectValue?["timestamp"] == .integer(try #require(event.json["timestamp"]?.intValue)))
                #expect(message.android == nil && message.message["data"] == nil)
                #expect(try await service.keptCounters(of: notificationID).sent == 1)

                // FCM calls a token gone: the activity's push fails and its token goes at the next
                // event; the device is not invalidated.
                gateway.script(token: fcmToken, [.unregistered])
                _ = try await Self.event(client, app.serverCredential, #"{"event": "update", "activity_id": "tram-3", "content_state": {"stop": "Zoo"}}"#)
                #expect(try await Pipeline.settled(service, notificationID))
                #expect(try await service.describeDeliveries(of: notificationID).contains("activity token gone"))
                #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(device) AND invalidated_at IS NULL") == 1)
                let next = try await Self.event(client, app.serverCredential, #"{"event": "end", "activity_id": "tram-3", "content_state": {}}"#)
                #expect(next.json["devices"]?.intValue == 0)
            }
        }
    }

    @Test func twoFirstEventsOfOneActivityAtOnceMakeOneActivity() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let body = #"{"event": "update", "activity_id": "race-1", "content_state": {"lap": 1}}"#
            async let first = Self.event(client, app.serverCredential, body)
            async let second = Self.event(client, app.serverCredential, body)
            let (a, b) = try await (first, second)
            #expect(a.status == .accepted && b.status == .accepted)
            #expect(a.json["notification_id"]?.intValue == b.json["notification_id"]?.intValue)
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 1)
        }
    }

    @Test func cancellingAnActivitysNotificationEndsTheActivity() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xCA1))
            _ = try await client.signed(
                .post, "/api/v1/device_tokens/\(device)/live_activities", body: #"{"activity_id": "c-1", "token": "\#(Pipeline.token(0xCA2))"}"#,
                as: app.deviceCredential)
            let first = try await Self.event(client, app.serverCredential, #"{"event": "update", "activity_id": "c-1", "content_state": {}}"#)
            let notificationID = try #require(first.json["notification_id"]?.intValue)
            #expect(try await client.signed(.delete, "/api/v1/notifications/\(notificationID)", as: app.serverCredential).status == .ok)
            let summary = try await client.signed(.get, "/api/v1/live_activities/c-1", as: app.serverCredential)
            #expect(summary.json["state"]?.stringValue == "ended")
            #expect(summary.json["tokens"]?.intValue == 0)
            let after = try await Self.event(client, app.serverCredential, #"{"event": "update", "activity_id": "c-1", "content_state": {}}"#)
            #expect(after.json["error"]?["code"]?.stringValue == "activity_ended")
        }
    }

    @Test func aGoneActivityTokenFailsItsPushKeepsTheDeviceAndIsDroppedAtTheNextEvent() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x6011), alias: "ann")
                let token = Pipeline.token(0x60AE)
                _ = try await client.signed(
                    .post, "/api/v1/device_tokens/\(device)/live_activities", body: #"{"activity_id": "ride-1", "token": "\#(token)"}"#,
                    as: app.deviceCredential)
                gateway.script(token: token, [.unregistered(since: Date())])
                let first = try await Self.event(client, app.serverCredential, #"{"event": "update", "activity_id": "ride-1", "content_state": {"eta": 5}}"#)
                let notificationID = try #require(first.json["notification_id"]?.intValue)
                #expect(try await Pipeline.settled(service, notificationID))
                let story = try await service.describeDeliveries(of: notificationID)
                #expect(story.contains("activity token gone"), "\(story)")
                #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(device) AND invalidated_at IS NULL") == 1)

                let next = try await Self.event(client, app.serverCredential, #"{"event": "update", "activity_id": "ride-1", "content_state": {"eta": 4}}"#)
                #expect(next.json["devices"]?.intValue == 0)
                let summary = try await client.signed(.get, "/api/v1/live_activities/ride-1", as: app.serverCredential)
                #expect(summary.json["tokens"]?.intValue == 0)
            }
        }
    }

    @Test func registrationsAndEventsRefuseWhatTheyCannotTake() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let iphone = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x1))
            let android = try #require(
                try await client.signed(.post, "/api/v1/device_tokens", body: #"{"provider": "fcm", "token": "fcm-la"}"#, as: app.deviceCredential)
                    .json["id"]?.intValue)
            func register(_ device: Int64, _ body: String) async throws -> TestResponse {
                try await client.signed(.post, "/api/v1/device_tokens/\(device)/live_activities", body: body, as: app.deviceCredential)
            }
            let valid = #"{"activity_id": "a", "token": "\#(Pipeline.token(0x2))"}"#
            #expect(try await register(android, valid).json["error"]?["code"]?.stringValue == "not_on_apns")
            #expect(try await register(999_999, valid).status == .notFound)
            #expect(try await register(iphone, #"{"activity_id": "a", "token": "not-hex"}"#).json["error"]?["field"]?.stringValue == "token")
            #expect(try await register(iphone, #"{"token": "\#(Pipeline.token(0x2))"}"#).json["error"]?["field"]?.stringValue == "activity_id")
            #expect(
                try await register(iphone, #"{"activity_id": "a", "token": "\#(Pipeline.token(0x2))", "x": 1}"#).json["error"]?["field"]?.stringValue == "x")
            let event = try await Self.event(client, app.serverCredential, #"{"event": "pause", "activity_id": "a"}"#)
            #expect(event.status == .unprocessableContent)
            #expect(event.json["error"]?["field"]?.stringValue == "event")
            let byDevice = try await Self.event(client, app.deviceCredential, #"{"event": "update", "activity_id": "a", "content_state": {}}"#)
            #expect(byDevice.status == .forbidden)
            #expect(try await client.signed(.get, "/api/v1/live_activities/nothing", as: app.serverCredential).status == .notFound)
        }
    }

    /// The first push to `token`, waiting for the workers to send it.
    static func first(_ gateway: SandboxAPNsGateway, _ token: String, _ service: TestService) async throws -> AcceptedPush? {
        _ = try await service.eventually { !gateway.pushes(to: token).isEmpty }
        return gateway.pushes(to: token).first
    }
}
