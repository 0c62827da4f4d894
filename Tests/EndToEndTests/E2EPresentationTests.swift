import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

/// What current iOS and Android apps show, end to end: API → PostgreSQL → worker → the fake
/// gateways, asserting what each platform is sent (docs/compatibility.md §12).
@Suite struct E2EPresentationTests {
    static func registerFCM(
        _ client: some TestClientProtocol, _ credential: Credential, token: String, alias: String, platform: String? = nil
    ) async throws -> TestResponse {
        let platformField = platform.map { #", "platform": "\#($0)""# } ?? ""
        return try await Pipeline.registration(client, credential, provider: "fcm", token: token, alias: alias, extra: platformField)
    }

    @Test func anIPhoneGetsACriticalAlertWithItsImageLocalizationKeysAndOverrides() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0xC417)
                _ = try await Pipeline.register(client, app.deviceCredential, token: token, alias: "ada")
                let id = try await Pipeline.send(
                    client, app.serverCredential,
                    #"""
                    {"title": "Gas leak", "interruption_level": "critical", "critical_sound": {"name": "alarm.caf", "volume": 0.9},
                     "relevance_score": 0.8, "image_url": "https://cdn.example.com/map.png", "loc_key": "LEAVE_NOW", "loc_args": ["B2"],
                     "apns": {"headers": {"apns-priority": "10"}, "payload": {"aps": {"target-content-id": "incident-7"}, "incident": 7}},
                     "user_aliases": ["ada"]}
                    """#)
                #expect(try await Pipeline.settled(service, id))
                let push = try #require(gateway.pushes(to: token).first)
                #expect(
                    push.payloadString
                        == #"{"aps":{"alert":{"loc-args":["B2"],"loc-key":"LEAVE_NOW","title":"Gas leak"},"interruption-level":"critical","#
                        + #""mutable-content":1,"relevance-score":0.8,"sound":{"critical":1,"name":"alarm.caf","volume":0.9},"#
                        + #""target-content-id":"incident-7"},"image_url":"https://cdn.example.com/map.png","incident":7,"n_id":\#(id)}"#)
                #expect(push.headers["apns-priority"] == "10")
                #expect(push.headers["apns-push-type"] == "alert")
                #expect(push.headers["apns-topic"] == "com.example.app")
            }
        }
    }

    @Test func theFakeAPNsRefusesACriticalAlertWhoseSoundIsNotCritical() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0xC418)
                _ = try await Pipeline.register(client, app.deviceCredential, token: token, alias: "ada")
                // The override takes critical: 1 away, as a mistaken sender might: Apple would play an ordinary sound.
                let id = try await Pipeline.send(
                    client, app.serverCredential,
                    #"""
                    {"title": "t", "critical_sound": {}, "apns": {"payload": {"aps": {"sound": {"critical": 0}}}}, "user_aliases": ["ada"]}
                    """#)
                #expect(try await Pipeline.settled(service, id))
                #expect(gateway.pushes(to: token).isEmpty)
                let story = try await service.describeDeliveries(of: id)
                #expect(story.contains("BadPayload"), "\(story)")
            }
        }
    }

    @Test func androidDevicesGetTheirPresentationInEachStyleAndTheAppsDefaultChannel() async throws {
        try await withFakeFCM { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectFCM(appID: app.app.id, to: gateway)
                let set = try await client.admin(
                    .patch, "/admin/apps/\(app.app.id)", body: #"{"android_style": "notification", "default_android_channel_id": "general"}"#,
                    service: service)
                #expect(set.status == .ok, "\(String(buffer: set.body))")
                #expect(set.json["default_android_channel_id"]?.stringValue == "general")
                let token = "fcm-presentation:APA91b" + String(repeating: "p", count: 40)
                #expect(try await Self.registerFCM(client, app.deviceCredential, token: token, alias: "ben").status == .ok)
                let id = try await Pipeline.send(
                    client, app.serverCredential,
                    #"""
                    {"title": "Table ready", "message": "Come to the desk", "interruption_level": "time-sensitive", "priority": "normal",
                     "image_url": "https://cdn.example.com/t.png", "android": {"icon": "ic_table", "color": "#00AA55", "visibility": "public"},
                     "fcm": {"android": {"direct_boot_ok": true}, "data": {"table": "12"}}, "user_aliases": ["ben"]}
                    """#)
                #expect(try await Pipeline.settled(service, id))
                let message = try #require(gateway.messages(to: token).first)
                #expect(message.androidPriority == "HIGH")
                #expect(message.notificationTitle == "Table ready")
                #expect(
                    message.android?["notification"]
                        == .object([
                            "tag": .string("n\(id)"), "image": .string("https://cdn.example.com/t.png"), "notification_priority": .string("PRIORITY_MAX"),
                            "channel_id": .string("general"), "icon": .string("ic_table"), "color": .string("#00AA55"),
                            "visibility": .string("PUBLIC"),
                        ]))
                #expect(message.android?["direct_boot_ok"] == .bool(true))
                #expect(message.data["table"] == "12")
                #expect(message.data["n_id"] == String(id))

                // The data style: the app draws it from prefixed data keys.
                _ = try await client.admin(.patch, "/admin/apps/\(app.app.id)", body: #"{"android_style": "data"}"#, service: service)
                let next = try await Pipeline.send(
                    client, app.serverCredential,
                    #"{"title": "t", "image_url": "https://cdn.example.com/u.png", "android": {"channel_id": "orders"}, "user_aliases": ["ben"]}"#)
                #expect(try await Pipeline.settled(service, next))
                let drawnByApp = try #require(gateway.messages(to: token).first { $0.data["n_id"] == String(next) })
                #expect(drawnByApp.data["image_url"] == "https://cdn.example.com/u.png")
                #expect(drawnByApp.data["android_channel_id"] == "orders")
                #expect(drawnByApp.android?["notification"] == nil)
            }
        }
    }

    @Test func anIPhoneOnFirebaseGetsAnAPNsBlockAndAnAndroidPhoneItsAndroidBlock() async throws {
        try await withFakeFCM { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectFCM(appID: app.app.id, to: gateway)
                let iphone = "fcm-iphone:APA91b" + String(repeating: "i", count: 40)
                let android = "fcm-android:APA91b" + String(repeating: "a", count: 40)
                let registered = try await Self.registerFCM(client, app.deviceCredential, token: iphone, alias: "cy", platform: "iOS")
                #expect(registered.json["platform"]?.stringValue == "ios")
                let plain = try await Self.registerFCM(client, app.deviceCredential, token: android, alias: "cy")
                #expect(plain.json["platform"]?.stringValue == "android")
                // A re-registration that does not say keeps what the device said before.
                let again = try await Self.registerFCM(client, app.deviceCredential, token: iphone, alias: "cy")
                #expect(again.json["platform"]?.stringValue == "ios")

                let id = try await Pipeline.send(
                    client, app.serverCredential,
                    #"""
                    {"title": "Hi", "message": "There", "badge": 4, "image_url": "https://cdn.example.com/h.png", "collapse_id": "hi",
                     "fcm": {"apns": {"headers": {"apns-priority": "5"}}}, "user_aliases": ["cy"]}
                    """#)
                #expect(try await Pipeline.settled(service, id))
                let toIPhone = try #require(gateway.messages(to: iphone).first)
                #expect(toIPhone.android == nil)
                let apns = try #require(toIPhone.apns)
                #expect(apns["headers"]?.objectValue?["apns-priority"] == .string("5"))
                #expect(apns["headers"]?.objectValue?["apns-push-type"] == .string("alert"))
                #expect(apns["headers"]?.objectValue?["apns-collapse-id"] == .string("hi"))
                #expect(
                    apns["payload"]
                        == .object([
                            "aps": .object([
                                "alert": .object(["title": .string("Hi"), "body": .string("There")]), "badge": .integer(4), "mutable-content": .integer(1),
                            ])
                        ]))
                #expect(apns["fcm_options"] == .object(["image": .string("https://cdn.example.com/h.png")]))
                #expect(toIPhone.data["n_id"] == String(id))

                let toAndroid = try #require(gateway.messages(to: android).first)
                #expect(toAndroid.apns == nil)
                #expect(toAndroid.androidPriority == "HIGH")
                #expect(toAndroid.data["image_url"] == "https://cdn.example.com/h.png")
                let counters = try await Pipeline.counters(client, app.serverCredential, id)
                #expect(counters["counters"]?["sent"]?.intValue == 2)
            }
        }
    }

    @Test func badPresentationFieldsAre422sNamingTheFieldAndStoreNothing() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            for (body, field) in [
                (#"{"title": "t", "interruption_level": "loud", "all": true}"#, "interruption_level"),
                (#"{"title": "t", "android": {"color": "orange"}, "all": true}"#, "android.color"),
                (#"{"title": "t", "image_url": "ftp://x.example/i.png", "all": true}"#, "image_url"),
                (#"{"title": "t", "apns": {"headers": {"apns-topic": "com.evil"}}, "all": true}"#, "apns.headers.apns-topic"),
                (#"{"title": "t", "apns": {"payload": {"pad": "\#(String(repeating: "z", count: 4_200))"}}, "all": true}"#, "apns.payload"),
            ] {
                let response = try await client.signed(.post, "/api/v1/notifications", body: body, as: app.serverCredential)
                #expect(response.status == .unprocessableContent, "\(body)")
                #expect(response.json["error"]?["field"]?.stringValue == field, "\(String(buffer: response.body))")
            }
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 0)
            // A platform the service does not know stays a platform property, as every key did before it read this one.
            let device = try await client.signed(
                .post, "/api/v1/device_tokens", body: #"{"provider": "fcm", "token": "t1", "platform": "windows"}"#, as: app.deviceCredential)
            #expect(device.status == .ok)
            #expect(device.json["platform"]?.stringValue == "android")
            #expect(device.json["platform_properties"]?["platform"]?.stringValue == "windows")
            let typed = try await client.signed(
                .post, "/api/v1/device_tokens", body: #"{"provider": "fcm", "token": "t2", "platform": 7}"#, as: app.deviceCredential)
            #expect(typed.status == .unprocessableContent)
            #expect(typed.json["error"]?["field"]?.stringValue == "platform")
            let environment = try await client.signed(
                .post, "/api/v1/device_tokens", body: #"{"provider": "fcm", "token": "t1", "apns_environment": "sandbox"}"#, as: app.deviceCredential)
            #expect(environment.json["error"]?["field"]?.stringValue == "apns_environment")
            let channel = try await client.admin(
                .patch, "/admin/apps/\(app.app.id)", body: #"{"default_android_channel_id": "\#(String(repeating: "c", count: 256))"}"#, service: service)
            #expect(channel.status == .unprocessableContent)
        }
    }

    @Test func aDebugBuildsTokenGoesToTheSandboxHostAndABadTokenIsAskedOfBothHosts() async throws {
        try await withFakeAPNs { production in
            try await withFakeAPNs { sandbox in
                try await withTestService(workers: true) { client, service in
                    let app = try await service.createApp()
                    try await service.connectAPNs(appID: app.app.id, to: production, sandbox: sandbox)
                    let settings = try await client.admin(.get, "/admin/apps/\(app.app.id)", service: service)
                    #expect(settings.json["apns"]?["sandbox_endpoint"]?.stringValue == sandbox.baseURL)
                    let debug = Pipeline.token(0xDEB6), release = Pipeline.token(0x4E1), undeclared = Pipeline.token(0x0DE8), gone = Pipeline.token(0x6011E)
                    let registered = try await client.signed(
                        .post, "/api/v1/device_tokens",
                        body: #"{"device_token": {"provider": "apns", "token": "\#(debug)", "user_alias": "dev", "apns_environment": "Sandbox"}}"#,
                        as: app.deviceCredential)
                    #expect(registered.json["apns_environment"]?.stringValue == "sandbox", "\(String(buffer: registered.body))")
                    _ = try await Pipeline.register(client, app.deviceCredential, token: release, alias: "dev")
                    // A debug build that did not say: production refuses its token, the sandbox takes it.
                    _ = try await Pipeline.register(client, app.deviceCredential, token: undeclared, alias: "dev")
                    production.script(token: undeclared, [.badDeviceToken])
                    let goneID = try await Pipeline.register(client, app.deviceCredential, token: gone, alias: "dev")
                    production.script(token: gone, Array(repeating: .badDeviceToken, count: 10))
                    sandbox.script(token: gone, Array(repeating: .badDeviceToken, count: 10))

                    let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "build 42 is ready", "user_aliases": ["dev"]}"#)
                    #expect(try await Pipeline.settled(service, id))
                    #expect(sandbox.pushes(to: debug).count == 1)
                    #expect(production.pushes(to: debug).isEmpty)
                    #expect(production.pushes(to: release).count == 1)
                    #expect(sandbox.pushes(to: release).isEmpty)
                    #expect(sandbox.pushes(to: undeclared).count == 1)
                    #expect(try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app.app.id) AND invalidated_at IS NOT NULL") == 1)
                    #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(goneID) AND invalidated_at IS NOT NULL") == 1)
                    let counters = try await Pipeline.counters(client, app.serverCredential, id)
                    #expect(counters["counters"]?["sent"]?.intValue == 3)
                    #expect(counters["counters"]?["failed"]?.intValue == 1)
                }
            }
        }
    }
}

/// `"badge": "+1"`: a badge per device that the service counts up and the app resets.
@Suite struct E2EBadgeTests {
    @Test func eachDeviceCountsItsOwnBadgeUpARetrySendsTheSameNumberAndTheAppResetsIt() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let alice = Pipeline.token(0xBAD6E1), bob = Pipeline.token(0xBAD6E2)
                let aliceID = try await Pipeline.register(client, app.deviceCredential, token: alice, alias: "alice")
                _ = try await Pipeline.register(client, app.deviceCredential, token: bob, alias: "bob")
                let set = try await client.signed(.patch, "/api/v1/device_tokens/\(aliceID)", body: #"{"badge": 2}"#, as: app.deviceCredential)
                #expect(set.json["badge"]?.intValue == 2, "\(String(buffer: set.body))")

                func badges(of token: String) throws -> [Int64] {
                    try gateway.pushes(to: token).sorted { $0.receivedAt < $1.receivedAt }.compactMap {
                        try JSONValue.decode($0.payload)["aps"]?["badge"]?.intValue
                    }
                }
                // The first try of alice's push meets a 503: the retry carries the same number.
                gateway.script(token: alice, [.serviceUnavailable])
                let first = try await Pipeline.send(client, app.serverCredential, #"{"message": "one", "badge": "+1", "user_aliases": ["alice", "bob"]}"#)
                #expect(try await Pipeline.settled(service, first))
                #expect(try badges(of: alice) == [3])
                #expect(try badges(of: bob) == [1])
                let second = try await Pipeline.send(client, app.serverCredential, #"{"message": "two", "badge": "+2", "user_aliases": ["alice", "bob"]}"#)
                #expect(try await Pipeline.settled(service, second))
                #expect(try badges(of: alice) == [3, 5])
                #expect(try badges(of: bob) == [1, 3])
                let shown = try await client.signed(.get, "/api/v1/device_tokens?user_alias=alice", as: app.deviceCredential)
                #expect(shown.json["data"]?[0]?["badge"]?.intValue ?? shown.json[0]?["badge"]?.intValue == 5, "\(String(buffer: shown.body))")

                // The app opens and resets it; an absolute badge leaves the kept count alone.
                _ = try await client.signed(.patch, "/api/v1/device_tokens/\(aliceID)", body: #"{"badge": 0}"#, as: app.deviceCredential)
                let third = try await Pipeline.send(client, app.serverCredential, #"{"message": "three", "badge": "+1", "user_aliases": ["alice"]}"#)
                #expect(try await Pipeline.settled(service, third))
                #expect(try badges(of: alice) == [3, 5, 1])

                // Two notifications counting up at once give the device two different numbers.
                async let a = Pipeline.send(client, app.serverCredential, #"{"message": "a", "badge": "+1", "user_aliases": ["bob"]}"#)
                async let b = Pipeline.send(client, app.serverCredential, #"{"message": "b", "badge": "+1", "user_aliases": ["bob"]}"#)
                let (ida, idb) = try await (a, b)
                #expect(try await Pipeline.settled(service, ida))
                #expect(try await Pipeline.settled(service, idb))
                #expect(try Set(badges(of: bob).suffix(2)) == [4, 5])
                #expect(try await service.integer("SELECT badge::int8 FROM devices WHERE token = \(bob)") == 5)
            }
        }
    }

    @Test func badBadgesAre422sNamingTheField() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            for badge in [#""+0""#, #""+100""#, #""1""#, #""-1""#, #""+1.5""#, "true", "-3"] {
                let response = try await client.signed(
                    .post, "/api/v1/notifications", body: #"{"message": "m", "badge": \#(badge), "all": true}"#, as: app.serverCredential)
                #expect(response.status == .unprocessableContent, "\(badge)")
                #expect(response.json["error"]?["field"]?.stringValue == "badge", "\(badge)")
            }
            let id = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xB1))
            for badge in ["-1", "100000", #""0""#] {
                let response = try await client.signed(.patch, "/api/v1/device_tokens/\(id)", body: #"{"badge": \#(badge)}"#, as: app.deviceCredential)
                #expect(response.status == .unprocessableContent, "\(badge)")
                #expect(response.json["error"]?["field"]?.stringValue == "badge")
            }
            let registration = try await client.signed(
                .post, "/api/v1/device_tokens", body: #"{"provider": "apns", "token": "\#(Pipeline.token(0xB2))", "badge": 0}"#, as: app.deviceCredential)
            #expect(registration.json["error"]?["code"]?.stringValue == "badge_on_update")
        }
    }
}
