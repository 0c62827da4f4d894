import Foundation
import HTTPTypes
import HummingbirdTesting
import NotifiableApp
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

/// `POST /api/v1/notifications/batch`: many different notifications in one signed request and one
/// transaction, each item refusing only itself, through to what each device receives.
@Suite struct E2ENotificationBatchTests {
    static func batch(_ client: some TestClientProtocol, _ credential: Credential, _ items: [String]) async throws -> TestResponse {
        try await client.signed(.post, "/api/v1/notifications/batch", body: #"{"notifications": [\#(items.joined(separator: ","))]}"#, as: credential)
    }

    @Test func personalisedPushesGoInOneRequestAndABadItemRefusesOnlyItself() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let ann = Pipeline.token(0xA11), bob = Pipeline.token(0xB0B)
                _ = try await Pipeline.register(client, app.deviceCredential, token: ann, alias: "ann")
                _ = try await Pipeline.register(client, app.deviceCredential, token: bob, alias: "bob")
                let forAnn = #"{"title": "Ann, your order shipped", "user_aliases": ["ann"], "idempotency_key": "job-1-ann"}"#
                let items = [
                    forAnn,
                    #"{"title": "Bob, your table is ready", "interruption_level": "time-sensitive", "user_aliases": ["bob"]}"#,
                    #"{"title": "Nobody", "interruption_level": "loud", "user_aliases": ["ann"]}"#,
                    forAnn,
                    #"{"title": "Another text under Ann's key", "user_aliases": ["ann"], "idempotency_key": "job-1-ann"}"#,
                ]
                let response = try await Self.batch(client, app.serverCredential, items)
                #expect(response.status == .accepted, "\(String(buffer: response.body))")
                let results = try #require(response.json["results"]?.arrayValue)
                #expect(results.map { $0["status"]?.intValue } == [202, 202, 422, 200, 422])
                let annID = try #require(results[0]["id"]?.intValue), bobID = try #require(results[1]["id"]?.intValue)
                #expect(results[3]["id"]?.intValue == annID, "the same key and body name the same notification")
                #expect(results[2]["error"]?["field"]?.stringValue == "interruption_level")
                #expect(results[4]["error"]?["code"]?.stringValue == "idempotency_key_reused")
                #expect(response.json["created"]?.intValue == 2)
                #expect(response.json["refused"]?.intValue == 2)
                #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 2)

                #expect(try await Pipeline.settled(service, annID))
                #expect(try await Pipeline.settled(service, bobID))
                let toAnn = try #require(gateway.pushes(to: ann).first), toBob = try #require(gateway.pushes(to: bob).first)
                #expect(gateway.pushes(to: ann).count == 1)
                #expect(try JSONValue.decode(toAnn.payload)["aps"]?["alert"]?["title"]?.stringValue == "Ann, your order shipped")
                #expect(try JSONValue.decode(toBob.payload)["aps"]?["interruption-level"]?.stringValue == "time-sensitive")
                #expect(try JSONValue.decode(toBob.payload)["n_id"]?.intValue == bobID)

                // Sent again whole (a retried job): nothing new for the keyed item.
                let again = try await Self.batch(client, app.serverCredential, [forAnn])
                #expect(again.status == .ok)
                #expect(again.json["results"]?[0]?["id"]?.intValue == annID)
            }
        }
    }

    @Test func aBatchIsWholeOrNothingAndItsShapeIsChecked() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let refused = try await Self.batch(client, app.serverCredential, [#"{"title": "t"}"#, #"{"user_aliases": ["a"]}"#])
            #expect(refused.status == .unprocessableContent)
            #expect(refused.json["error"]?["code"]?.stringValue == "batch_refused")
            #expect(refused.json["results"]?[0]?["error"]?["code"]?.stringValue == "no_target")
            #expect(refused.json["results"]?[1]?["error"]?["code"]?.stringValue == "empty_notification")

            let item = #"{"title": "t", "all": true}"#
            let tooMany = try await Self.batch(client, app.serverCredential, Array(repeating: item, count: 501))
            #expect(tooMany.status == .unprocessableContent)
            #expect(tooMany.json["error"]?["code"]?.stringValue == "too_many")
            for body in [#"{}"#, #"{"notifications": []}"#, #"{"notifications": {}}"#, #"{"notifications": [], "all": true}"#, #"[]"#] {
                let answer = try await client.signed(.post, "/api/v1/notifications/batch", body: body, as: app.serverCredential)
                #expect(answer.status == .unprocessableContent, "\(body)")
                #expect(answer.json["error"]?["code"] != nil, "\(body)")
            }
            let headed = try await client.signed(
                .post, "/api/v1/notifications/batch", bytes: Array(#"{"notifications": [\#(item)]}"#.utf8),
                contentType: "application/json; charset=utf-8", as: app.serverCredential, headers: [HTTPField.Name("Idempotency-Key")!: "k"])
            #expect(headed.status == .unprocessableContent)
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 0)

            // Past the 64 KiB of a single request, within the batch's 4 MiB: 400 items of 400 characters.
            let long = String(repeating: "m", count: 400)
            let big = try await Self.batch(
                client, app.serverCredential, (0..<400).map { #"{"message": "\#(long)", "user_aliases": ["u\#($0)"]}"# })
            #expect(big.status == .accepted)
            #expect(big.json["created"]?.intValue == 400)
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 400)
            let device = try await client.signed(.post, "/api/v1/notifications/batch", body: #"{"notifications": [\#(item)]}"#, as: app.deviceCredential)
            #expect(device.status == .forbidden)
        }
    }

    @Test func eachNotificationOfABatchCountsAgainstTheSendLimit() async throws {
        let configure: (inout ServerConfiguration) -> Void = { configuration in
            configuration.rateLimits = RateLimits(perCredential: [:], perApp: [.sends: RateLimit(count: 10, periodSeconds: 3600)])
        }
        try await withTestService(isolatedDatabase: true, configure: configure) { client, service in
            let app = try await service.createApp()
            let item = #"{"title": "t", "all": true}"#
            let first = try await Self.batch(client, app.serverCredential, Array(repeating: item, count: 8))
            #expect(first.status == .accepted)
            let second = try await Self.batch(client, app.serverCredential, Array(repeating: item, count: 3))
            #expect(second.status == .tooManyRequests)
            #expect(second.headers[.retryAfter] != nil)
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 8)
            // More than the limit holds at once is refused outright: no wait would admit it.
            let tooBig = try await Self.batch(client, app.serverCredential, Array(repeating: item, count: 11))
            #expect(tooBig.status == .unprocessableContent)
            #expect(tooBig.json["error"]?["code"]?.stringValue == "over_rate_limit")
        }
    }
}
