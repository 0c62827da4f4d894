import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

/// "Handled once, dismissed everywhere": a change one device makes reaches the user's other
/// devices as a background push, through the queue, over the real HTTP/2 fake gateways.
@Suite struct E2EStatefulNotificationsTests {
    static func apnsToken(_ n: Int) -> String { String(format: "%064x", n) }

    /// An app on the fake APNs whose user has two iPhones, A and B, and a stateful notification to
    /// that user, pushed to both.
    static func twoDevicesWithAStatefulNotification(
        _ client: some TestClientProtocol, _ service: TestService, _ apns: SandboxAPNsGateway, alias: String, tokens seed: Int
    ) async throws -> (app: AppStore.CreatedApp, deviceA: Int64, tokenA: String, tokenB: String, id: Int64) {
        let app = try await service.createApp()
        try await service.connectAPNs(appID: app.app.id, to: apns)
        let tokenA = apnsToken(seed), tokenB = apnsToken(seed + 1)
        let deviceA = try await Pipeline.register(client, app.deviceCredential, token: tokenA, alias: alias)
        _ = try await Pipeline.register(client, app.deviceCredential, token: tokenB, alias: alias)
        let sent = try await client.signed(
            .post, "/api/v1/notifications", body: #"{"title": "Hi", "user_aliases": ["\#(alias)"], "stateful": true}"#, as: app.serverCredential
        )
        let id = try #require(sent.json["id"]?.intValue)
        #expect(try await Pipeline.settled(service, id))
        return (app, deviceA, tokenA, tokenB, id)
    }

    static func isBackground(_ push: AcceptedPush) -> Bool { push.headers["apns-push-type"] == "background" }

    @Test func aChangeOnOneDeviceReachesEachOtherDeviceOnceAndNotItself() async throws {
        try await withFakeAPNs { apns in
            try await withFakeFCM { fcm in
                try await withTestService(workers: true) { client, service in
                    let app = try await service.createApp()
                    try await service.connectAPNs(appID: app.app.id, to: apns)
                    try await service.connectFCM(appID: app.app.id, to: fcm)
                    let tokenA = Self.apnsToken(0xA), tokenB = Self.apnsToken(0xB), tokenC = "fcm-token-c"
                    let deviceA = try await Pipeline.register(client, app.deviceCredential, token: tokenA, alias: "alice")
                    _ = try await Pipeline.register(client, app.deviceCredential, token: tokenB, alias: "alice")
                    _ = try await Pipeline.register(client, app.deviceCredential, provider: "fcm", token: tokenC, alias: "alice")
                    _ = try await Pipeline.register(client, app.deviceCredential, token: Self.apnsToken(0xBB), alias: "bob")

                    let sent = try await client.signed(
                        .post, "/api/v1/notifications", body: #"{"title": "Your order shipped", "user_aliases": ["alice"], "stateful": true}"#,
                        as: app.serverCredential
                    )
                    let id = try #require(sent.json["id"]?.intValue)
                    #expect(try await Pipeline.settled(service, id))
                    #expect(apns.pushes(to: tokenA).count == 1)
                    #expect(apns.pushes(to: tokenB).count == 1)
                    #expect(fcm.messages(to: tokenC).count == 1)

                    // Device B is up to date with the feed.
                    let alice = try await client.userToken(for: "alice", as: app.serverCredential)
                    let before = try await client.asUser(alice, .get, "/api/v1/me/changes")
                    let cursor = try #require(before.json["next_cursor"]?.stringValue)

                    // Device A marks it read.
                    let read = try await client.asUser(
                        alice, .patch, "/api/v1/me/notifications/\(id)", body: #"{"read_state": "read", "device_token_id": \#(deviceA)}"#
                    )
                    #expect(read.status == .ok, "\(String(buffer: read.body))")
                    #expect(try await Pipeline.settled(service, id))

                    #expect(apns.pushes(to: tokenA).count == 1, "the device that made the change is not told")
                    let toB = apns.pushes(to: tokenB).filter(Self.isBackground)
                    try #require(toB.count == 1)
                    let signal = toB[0]
                    #expect(signal.headers["apns-priority"] == "5")
                    #expect(signal.headers["apns-collapse-id"] == "n\(id)-state")
                    let payload = try JSONValue.decode(signal.payload)
                    #expect(payload["aps"] == .object(["content-available": .integer(1)]), "a background push shows nothing")
                    #expect(payload["n_id"]?.intValue == id)
                    #expect(payload["n_sync"]?.stringValue == "updated")
                    #expect(payload["n_read_state"]?.stringValue == "read")
                    #expect(payload["n_user_action_state"]?.stringValue == "no_interaction")

                    let toC = fcm.messages(to: tokenC)
                    try #require(toC.count == 2)
                    let message = toC[1].message
                    #expect(message["notification"] == nil, "a data-only message")
                    #expect(message["android"]?["priority"]?.stringValue == "NORMAL")
                    #expect(message["android"]?["collapse_key"]?.stringValue == "n\(id)-state")
                    #expect(message["data"]?["n_read_state"]?.stringValue == "read")
                    #expect(message["data"]?["n_cursor"] == payload["n_cursor"])
                    #expect(apns.pushes(to: Self.apnsToken(0xBB)).isEmpty)

                    // B's feed from its cursor holds exactly that change, at the cursor the signal carried.
                    let after = try await client.asUser(alice, .get, "/api/v1/me/changes?since=\(cursor)")
                    let changes = try #require(after.json["changes"]?.arrayValue)
                    try #require(changes.count == 1)
                    #expect(changes[0]["kind"]?.stringValue == "updated")
                    #expect(changes[0]["id"]?.intValue == id)
                    #expect(changes[0]["read_state"]?.stringValue == "read")
                    #expect(changes[0]["device_token_id"]?.intValue == deviceA)
                    #expect(changes[0]["cursor"] == payload["n_cursor"])

                    // A delete from B reaches A and C, not B.
                    let deviceB = try #require(
                        try await client.signed(.get, "/api/v1/device_tokens?user_alias=alice", as: app.deviceCredential)
                            .json.arrayValue?.first { $0["token"]?.stringValue == tokenB }?["id"]?.intValue)
                    #expect(try await client.asUser(alice, .delete, "/api/v1/me/notifications/\(id)?device_token_id=\(deviceB)").status == .noContent)
                    #expect(try await Pipeline.settled(service, id))
                    #expect(apns.pushes(to: tokenB).filter(Self.isBackground).count == 1)
                    let deleted = try #require(apns.pushes(to: tokenA).filter(Self.isBackground).first)
                    #expect(try JSONValue.decode(deleted.payload)["n_sync"]?.stringValue == "deleted")
                    #expect(fcm.messages(to: tokenC).last?.message["data"]?["n_sync"]?.stringValue == "deleted")
                }
            }
        }
    }

    /// The SDKs already report "opened": for a stateful notification that handles it on every device.
    @Test func anSDKOpenedReportReadsAndActivatesItEverywhere() async throws {
        try await withFakeAPNs { apns in
            try await withTestService(workers: true) { client, service in
                let (app, deviceA, tokenA, tokenB, id) = try await Self.twoDevicesWithAStatefulNotification(
                    client, service, apns, alias: "dan", tokens: 0x2A
                )

                for _ in 0..<2 {
                    let opened = try await client.signed(
                        .post, "/api/v1/notifications/\(id)/opened", body: #"{"device_token_id": "\#(deviceA)", "user": {"alias": "dan"}}"#,
                        as: app.deviceCredential
                    )
                    #expect(opened.status == .ok)
                }
                #expect(try await Pipeline.settled(service, id))
                let signals = apns.pushes(to: tokenB).filter(Self.isBackground)
                try #require(signals.count == 1, "a repeated report changes nothing more")
                let payload = try JSONValue.decode(signals[0].payload)
                #expect(payload["n_read_state"]?.stringValue == "read")
                #expect(payload["n_user_action_state"]?.stringValue == "activated")
                #expect(apns.pushes(to: tokenA).filter(Self.isBackground).isEmpty)
                let states = try await client.signed(.get, "/api/v1/notifications/\(id)", as: app.serverCredential).json["user_states"]
                #expect(states == .object(["targeted": .integer(1), "read": .integer(1), "dismissed": .integer(0), "activated": .integer(1)]))
            }
        }
    }

    @Test func aBurstOfChangesCollapsesToAFewSignalsEndingWithTheLastState() async throws {
        try await withFakeAPNs { apns in
            try await withTestService(workers: true) { client, service in
                let (app, deviceA, tokenA, tokenB, id) = try await Self.twoDevicesWithAStatefulNotification(
                    client, service, apns, alias: "carol", tokens: 0x1A
                )
                let carol = try await client.userToken(for: "carol", as: app.serverCredential)

                // Twenty changes at once, as taps on two devices and a backend might make them.
                let started = ContinuousClock.now
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for n in 0..<20 {
                        group.addTask {
                            let state = ["read", "unread"][n % 2], action = ["dismissed", "activated", "no_interaction"][n % 3]
                            let response = try await client.asUser(
                                carol, .patch, "/api/v1/me/notifications/\(id)",
                                body: #"{"read_state": "\#(state)", "user_action_state": "\#(action)", "device_token_id": \#(deviceA)}"#
                            )
                            #expect(response.status == .ok)
                        }
                    }
                    try await group.waitForAll()
                }
                let burst = ContinuousClock.now - started
                #expect(try await Pipeline.settled(service, id))
                let signals = apns.pushes(to: tokenB).filter(Self.isBackground)
                // One signal per collapsing window the burst spanned, and one in flight when it began.
                let windows = Int((burst / service.configuration.syncSignalDelay).rounded(.up))
                #expect((1...max(3, windows + 1)).contains(signals.count), "20 changes over \(burst) sent \(signals.count) signals")
                let changes = try #require(
                    try await service.integer("SELECT count(*) FROM user_notification_changes WHERE notification_id = \(id) AND kind = 'updated'"))
                #expect(changes > 1)
                let last = try JSONValue.decode(signals.last?.payload ?? [])
                let final = try await client.asUser(carol, .get, "/api/v1/me/notifications/\(id)").json
                #expect(last["n_read_state"] == final["read_state"])
                #expect(last["n_user_action_state"] == final["user_action_state"])
                #expect(last["n_cursor"]?.stringValue == String(changes + 1), "the last signal carries the last change's cursor")
                #expect(apns.pushes(to: tokenA).filter(Self.isBackground).isEmpty)
            }
        }
    }
}
