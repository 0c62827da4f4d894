import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableTesting
import Testing

/// Broadcast channels (iOS 18): an activity many people follow gets one APNs channel, made by a
/// worker at Apple's channel management API; its updates and end are one broadcast each, in
/// order; a start through push-to-start names the channel; the channel is deleted after the end.
/// The rules the fake gateway holds the service to are Apple's (docs/compatibility.md §12).
@Suite struct E2EActivityChannelTests {
    static func event(_ client: some TestClientProtocol, _ credential: Credential, _ body: String) async throws -> TestResponse {
        let response = try await client.signed(.post, "/api/v1/live_activities", body: body, as: credential)
        #expect(response.status == .accepted, "\(String(buffer: response.body))")
        return response
    }

    static func aps(_ push: AcceptedPush) throws -> [String: JSONValue] {
        try #require(try JSONValue.decode(push.payload).objectValue?["aps"]?.objectValue)
    }

    @Test func aFollowedActivityIsBroadcastInOrderAndItsChannelGoesWithIt() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let summary = { @Sendable in try await client.signed(.get, "/api/v1/live_activities/cup-final", as: app.serverCredential) }

                let asked = try await client.signed(.post, "/api/v1/live_activities/cup-final/channel", body: "{}", as: app.serverCredential)
                #expect(asked.status == .accepted, "\(String(buffer: asked.body))")
                #expect(asked.json["channel"]?["state"]?.stringValue == "requested")
                #expect(try await service.eventually(timeout: .seconds(20)) { try await summary().json["channel"]?["state"]?.stringValue == "open" })
                let channelID = try #require(try await summary().json["channel"]?["channel_id"]?.stringValue)
                #expect(gateway.channelIDs == [channelID])
                // Asking again names the same channel; Apple makes no second one.
                let again = try await client.signed(.post, "/api/v1/live_activities/cup-final/channel", as: app.serverCredential)
                #expect(again.status == .ok && again.json["channel"]?["channel_id"]?.stringValue == channelID)

                // A phone starts it through its push-to-start token: the start names the channel to listen to.
                let phone = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xC4), alias: "fan")
                let startToken = Pipeline.token(0xC5)
                _ = try await client.signed(
                    .post, "/api/v1/device_tokens/\(phone)/push_to_start_tokens", body: #"{"attributes_type": "Match", "token": "\#(startToken)"}"#,
                    as: app.deviceCredential)
                let started = try await Self.event(
                    client, app.serverCredential,
                    #"""
                    {"event": "start", "activity_id": "cup-final", "attributes_type": "Match", "attributes": {"home": "A"}, "content_state": {"n": 0},
                     "alert": {"title": "Kick-off"}, "user_aliases": ["fan"]}
                    """#)
                let notificationID = try #require(started.json["notification_id"]?.intValue)
                #expect(try await Pipeline.settled(service, notificationID))
                let start = try #require(gateway.pushes(to: startToken).first)
                #expect(try Self.aps(start)["input-push-channel"] == .string(channelID))

                // Twenty updates from two backend requests at a time, then the end.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for lane in 0..<2 {
                        group.addTask {
                            for n in 1...10 {
                                _ = try await Self.event(
                                    client, app.serverCredential,
                                    #"{"event": "update", "activity_id": "cup-final", "content_state": {"n": \#(lane * 100 + n)}}"#)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                _ = try await Self.event(client, app.serverCredential, #"{"event": "end", "activity_id": "cup-final", "content_state": {"n": -1}}"#)
                #expect(try await service.eventually(timeout: .seconds(30)) { try await summary().json["channel"]?["state"]?.stringValue == "closed" })
                #expect(gateway.channelIDs.isEmpty, "the channel is deleted at Apple after the end")

                let broadcasts = gateway.broadcasts(to: channelID).sorted { $0.receivedAt < $1.receivedAt }
                let timestamps = try broadcasts.map { try #require(try Self.aps($0)["timestamp"]?.intValue) }
                #expect(timestamps == timestamps.sorted(), "never an older state after a newer")
                #expect(try Self.aps(try #require(broadcasts.last))["event"] == .string("end"))
                #expect(try Self.aps(try #require(broadcasts.last))["content-state"] == .object(["n": .integer(-1)]))
                for lane in 0..<2 {
                    let seen = try broadcasts.compactMap { try Self.aps($0)["content-state"]?.objectValue?["n"]?.intValue }.filter {
                        $0 / 100 == Int64(lane) && $0 > 0
                    }
                    #expect(seen == seen.sorted(), "lane \(lane): \(seen)")
                }
                let headers = try #require(broadcasts.first?.headers)
                #expect(headers["apns-push-type"] == "liveactivity" && headers["apns-channel-id"] == channelID)
                #expect(headers["apns-expiration"] == "0", "a channel that stores no message takes only 0")
                #expect(headers["apns-topic"] == nil, "the bundle id is in the path")
                // Each event was broadcast, or a newer one took its place before it went: nothing
                // failed or is left waiting, and what the summary counts sent is what Apple took.
                let counts = try #require(try await summary().json["broadcasts"]?.objectValue)
                #expect(counts["sent"]?.intValue == Int64(broadcasts.count), "\(counts)")
                #expect(Set(counts.keys).isSubset(of: ["sent", "cancelled"]), "\(counts)")
                #expect(gateway.pushes(to: startToken).count == 1, "the phone gets its updates from the channel")
            }
        }
    }

    @Test func aStoringChannelKeepsTheEventsExpiryAndAppleSaysWhatItRefuses() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let asked = try await client.signed(
                    .post, "/api/v1/live_activities/flight-2/channel", body: #"{"message_storage": true}"#, as: app.serverCredential)
                #expect(asked.status == .accepted)
                let summary = { @Sendable in try await client.signed(.get, "/api/v1/live_activities/flight-2", as: app.serverCredential) }
                #expect(try await service.eventually(timeout: .seconds(20)) { try await summary().json["channel"]?["state"]?.stringValue == "open" })
                let channelID = try #require(try await summary().json["channel"]?["channel_id"]?.stringValue)
                #expect(try await summary().json["channel"]?["message_storage"] == .bool(true))
                _ = try await Self.event(client, app.serverCredential, #"{"event": "update", "activity_id": "flight-2", "content_state": {"gate": "B7"}}"#)
                #expect(try await service.eventually(timeout: .seconds(20)) { !gateway.broadcasts(to: channelID).isEmpty })
                let expiration = try #require(gateway.broadcasts(to: channelID).first?.headers["apns-expiration"])
                #expect((Int64(expiration) ?? 0) > Int64(Date().timeIntervalSince1970), "kept until the event expires")

                // Bad input is refused with the field named; an ended activity takes no channel.
                let bad = try await client.signed(
                    .post, "/api/v1/live_activities/flight-2/channel", body: #"{"message_storage": "yes"}"#, as: app.serverCredential)
                #expect(bad.status == .unprocessableContent && bad.errorField == "message_storage")
                let unknown = try await client.signed(
                    .post, "/api/v1/live_activities/flight-2/channel", body: #"{"storage": true}"#, as: app.serverCredential)
                #expect(unknown.status == .unprocessableContent)
                #expect(try await client.signed(.post, "/api/v1/live_activities/flight-2/channel", as: app.deviceCredential).status == .forbidden)
                _ = try await Self.event(client, app.serverCredential, #"{"event": "end", "activity_id": "flight-2", "content_state": {}}"#)
                let ended = try await client.signed(.post, "/api/v1/live_activities/flight-2/channel", as: app.serverCredential)
                #expect(ended.status == .conflict && ended.errorCode == "activity_ended")
            }
        }
    }
    /// An app in sandbox mode makes its channels and broadcasts at the worker's built-in gateway,
    /// never at Apple.
    @Test func anAppInSandboxModeBroadcastsToTheBuiltInGateway() async throws {
        try await withTestService(workers: true) { client, service in
            let created = try await client.admin(.post, "/admin/apps", body: #"{"name": "Demo", "delivery_mode": "sandbox"}"#, service: service)
            let server = Credential(.server, ofCreatedApp: created.json)
            #expect(try await client.signed(.post, "/api/v1/live_activities/demo-1/channel", as: server).status == .accepted)
            let summary = { @Sendable in try await client.signed(.get, "/api/v1/live_activities/demo-1", as: server) }
            #expect(try await service.eventually(timeout: .seconds(20)) { try await summary().json["channel"]?["state"]?.stringValue == "open" })
            _ = try await Self.event(client, server, #"{"event": "update", "activity_id": "demo-1", "content_state": {"n": 1}}"#)
            #expect(try await service.eventually(timeout: .seconds(20)) { try await summary().json["broadcasts"]?["sent"]?.intValue == 1 })
            _ = try await Self.event(client, server, #"{"event": "end", "activity_id": "demo-1", "content_state": {"n": 2}}"#)
            #expect(try await service.eventually(timeout: .seconds(20)) { try await summary().json["channel"]?["state"]?.stringValue == "closed" })
            #expect(try await summary().json["broadcasts"]?["sent"]?.intValue == 2)
        }
    }
}
