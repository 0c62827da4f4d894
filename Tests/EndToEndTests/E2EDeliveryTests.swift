import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

/// The whole pipeline over real PostgreSQL and a real HTTP/2 fake APNs: API → fan-out →
/// queue → worker → sender → gateway, and the SDKs' status reports back.
@Suite struct E2EDeliveryTests {
    @Test func aUsersTwoDevicesGetItOnceEachWithNIDAndTheirLocale() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let french = Pipeline.token(0xF1), brazilian = Pipeline.token(0xB2), other = Pipeline.token(0x07)
                _ = try await Pipeline.register(client, app.deviceCredential, token: french, alias: "alice", language: "fr")
                _ = try await Pipeline.register(client, app.deviceCredential, token: brazilian, alias: "alice", language: "pt", country: "BR")
                _ = try await Pipeline.register(client, app.deviceCredential, token: other, alias: "bob")

                let id = try await Pipeline.send(
                    client, app.serverCredential,
                    #"""
                    {"title": "Hello", "message": "Default", "user_aliases": ["alice"],
                     "localized": {"fr": {"title": "Bonjour", "message": "Défaut"}, "pt-BR": {"title": "Olá"}},
                     "parameters": {"screen": "inbox"}, "badge": 3}
                    """#)
                #expect(try await Pipeline.settled(service, id))

                let toFrench = gateway.pushes(to: french), toBrazilian = gateway.pushes(to: brazilian)
                #expect(toFrench.count == 1)
                #expect(toBrazilian.count == 1)
                #expect(gateway.pushes(to: other).isEmpty)
                let frenchPayload = try JSONValue.decode(toFrench.first?.payload ?? [])
                #expect(frenchPayload["n_id"]?.intValue == id)
                #expect(frenchPayload["aps"]?["alert"]?["title"]?.stringValue == "Bonjour")
                #expect(frenchPayload["aps"]?["badge"]?.intValue == 3)
                #expect(frenchPayload["screen"]?.stringValue == "inbox")
                let brazilianPayload = try JSONValue.decode(toBrazilian.first?.payload ?? [])
                #expect(brazilianPayload["aps"]?["alert"]?["title"]?.stringValue == "Olá")
                #expect(toFrench.first?.headers["apns-topic"] == "com.example.app")
                #expect(toFrench.first?.headers["apns-push-type"] == "alert")

                let counters = try await Pipeline.counters(client, app.serverCredential, id)
                #expect(counters["counters"]?["targeted"]?.intValue == 2)
                #expect(counters["counters"]?["sent"]?.intValue == 2)
                #expect(counters["state"]?.stringValue == "completed")
            }
        }
    }

    @Test func deliveredAndOpenedCountOnceHoweverOftenReported() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xD1), alias: "alice")
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "Hi", "device_ids": [\#(device)]}"#)
                #expect(try await Pipeline.settled(service, id))

                for _ in 0..<3 {
                    let delivered = try await client.signed(
                        .post, "/api/v1/notifications/\(id)/delivered", body: #"{"device_token_id": "\#(device)"}"#, as: app.deviceCredential)
                    #expect(delivered.status == .ok)
                }
                var counters = try await Pipeline.counters(client, app.serverCredential, id)["counters"]
                #expect(counters?["delivered"]?.intValue == 1)
                #expect(counters?["opened"]?.intValue == 0)
                for _ in 0..<2 {
                    let opened = try await client.signed(
                        .post, "/api/v1/notifications/\(id)/opened", body: #"{"device_token_id": \#(device), "user": {"alias": "alice"}}"#,
                        as: app.deviceCredential)
                    #expect(opened.status == .ok)
                }
                counters = try await Pipeline.counters(client, app.serverCredential, id)["counters"]
                #expect(counters?["delivered"]?.intValue == 1)
                #expect(counters?["opened"]?.intValue == 1)

                // Unknown notification, another device, another user: 404.
                let unknown = try await client.signed(
                    .post, "/api/v1/notifications/999999999/opened", body: #"{"device_token_id": \#(device)}"#, as: app.deviceCredential)
                #expect(unknown.status == .notFound)
                let stranger = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xD2), alias: "eve")
                let notTheirs = try await client.signed(
                    .post, "/api/v1/notifications/\(id)/delivered", body: #"{"device_token_id": \#(stranger)}"#, as: app.deviceCredential)
                #expect(notTheirs.status == .notFound)
                let wrongUser = try await client.signed(
                    .post, "/api/v1/notifications/\(id)/opened", body: #"{"device_token_id": \#(device), "user": {"alias": "eve"}}"#, as: app.deviceCredential)
                #expect(wrongUser.status == .notFound)
            }
        }
    }

    @Test func aDeviceTargetedByAliasAndByIDGetsOnePush() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0xA1)
                let device = try await Pipeline.register(client, app.deviceCredential, token: token, alias: "alice", language: "en")
                let id = try await Pipeline.send(
                    client, app.serverCredential,
                    #"""
                    {"message": "Once", "user_aliases": ["alice"], "device_ids": [\#(device)],
                     "filters": [{"field": "language", "op": "=", "value": "en"}]}
                    """#)
                #expect(try await Pipeline.settled(service, id))
                let story = try await service.describeDeliveries(of: id)
                #expect(gateway.pushes(to: token).count == 1, "\(story)")
                #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(id)") == 1)
            }
        }
    }

    @Test func unregisteredTokenInvalidatesTheDeviceAndTheNextNotificationSkipsIt() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let dead = Pipeline.token(0x410), alive = Pipeline.token(0x200)
                let deadID = try await Pipeline.register(client, app.deviceCredential, token: dead, alias: "alice")
                _ = try await Pipeline.register(client, app.deviceCredential, token: alive, alias: "alice")
                gateway.script(token: dead, [.unregistered(since: Date())])

                let first = try await Pipeline.send(client, app.serverCredential, #"{"message": "1", "user_aliases": ["alice"]}"#)
                #expect(try await Pipeline.settled(service, first))
                #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(deadID) AND invalidated_at IS NOT NULL") == 1)
                let failed = try await client.signed(.get, "/api/v1/notifications/\(first)/deliveries?state=failed", as: app.serverCredential)
                #expect(failed.json["data"]?[0]?["reason"]?.stringValue?.contains("Unregistered") == true)

                let second = try await Pipeline.send(client, app.serverCredential, #"{"message": "2", "user_aliases": ["alice"]}"#)
                #expect(try await Pipeline.settled(service, second))
                #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(second)") == 1)
                #expect(gateway.pushes(to: dead).isEmpty)
                let story = try await service.describeDeliveries(of: first) + " / " + service.describeDeliveries(of: second)
                #expect(gateway.pushes(to: alive).count == 2, "\(story) pushes \(gateway.acceptedPushes.map { "\($0.token.suffix(4)) \($0.receivedAt)" })")
            }
        }
    }

    @Test func anUnregisteredVerdictOlderThanARegistrationIsIgnored() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0x411)
                let id = try await Pipeline.register(client, app.deviceCredential, token: token, alias: "alice")
                // APNs last knew the token invalid an hour before the app registered it again.
                gateway.script(token: token, [.unregistered(since: Date().addingTimeInterval(-3600))])
                let notification = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "device_ids": [\#(id)]}"#)
                #expect(try await Pipeline.settled(service, notification))
                #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(id) AND invalidated_at IS NULL") == 1)
            }
        }
    }

    @Test func aTransientFailureIsRetriedUntilSent() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0x503)
                let device = try await Pipeline.register(client, app.deviceCredential, token: token)
                gateway.script(token: token, [.serviceUnavailable])
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "device_ids": [\#(device)]}"#)
                #expect(try await Pipeline.settled(service, id))
                let story = try await service.describeDeliveries(of: id)
                #expect(try await service.integer("SELECT attempts FROM deliveries WHERE notification_id = \(id) AND state = 'sent'") == 2, "\(story)")
                #expect(gateway.pushes(to: token).count == 1)
            }
        }
    }

    @Test func aRetryWaitsAtLeastAsLongAsRetryAfterAsks() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0x429)
                let device = try await Pipeline.register(client, app.deviceCredential, token: token)
                // The test policy's own backoff is 50 ms; APNs asks for 2 s.
                gateway.script(token: token, [.tooManyRequests(retryAfterSeconds: 2)])
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "device_ids": [\#(device)]}"#)
                #expect(try await Pipeline.settled(service, id))
                let waited = try await service.integer(
                    "SELECT (1000 * extract(epoch FROM sent_at - created_at))::int8 FROM deliveries WHERE notification_id = \(id) AND state = 'sent'"
                )
                #expect((waited ?? 0) >= 2000, "waited \(String(describing: waited)) ms")
                #expect(gateway.pushes(to: token).count == 1)
            }
        }
    }

    @Test func exhaustedRetriesEndDeadAndARequeueSendsThem() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0x8503)
                let device = try await Pipeline.register(client, app.deviceCredential, token: token)
                gateway.script(token: token, Array(repeating: .serviceUnavailable, count: 8))
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "device_ids": [\#(device)]}"#)
                #expect(try await Pipeline.settled(service, id))
                let story = try await service.describeDeliveries(of: id)
                #expect(try await service.integer("SELECT attempts FROM deliveries WHERE notification_id = \(id) AND state = 'dead'") == 8, "\(story)")
                #expect(gateway.pushes(to: token).isEmpty)

                let admin = try #require(service.configuration.adminToken)
                let dead = try await client.execute(
                    uri: "/admin/deliveries/dead?app_id=\(app.app.id)", method: .get, headers: [.authorization: "Bearer \(admin)"], body: nil)
                #expect(dead.json["data"]?.arrayValue?.count == 1)
                let requeue = try await client.execute(
                    uri: "/admin/deliveries/dead/requeue", method: .post, headers: [.authorization: "Bearer \(admin)"],
                    body: ByteBuffer(string: #"{"app_id": \#(app.app.id)}"#)
                )
                #expect(requeue.json["requeued"]?.intValue == 1)
                #expect(try await Pipeline.settled(service, id))
                #expect(gateway.pushes(to: token).count == 1)
                #expect(try await service.deliveries(of: id, in: "sent") == 1)
            }
        }
    }

    @Test func anExpiredNotificationIsNotSent() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0xE1)
                let device = try await Pipeline.register(client, app.deviceCredential, token: token)
                // Stored directly: the API refuses a notification that has already expired.
                let request = NotificationRequest(
                    content: NotificationContent(text: LocalizedText(message: "late"), expiresAt: Date().addingTimeInterval(-1)),
                    targeting: Targeting(deviceIDs: [device])
                )
                let (notification, _) = try await NotificationStore(client: service.postgres, logger: TestDatabase.logger)
                    .create(appID: app.app.id, request: request)
                #expect(try await Pipeline.settled(service, notification.id))
                let story = try await service.describeDeliveries(of: notification.id)
                #expect(try await service.deliveries(of: notification.id, in: "dead") == 1, "\(story)")
                #expect(gateway.pushes(to: token).isEmpty)
            }
        }
    }

    @Test func theSameIdempotencyKeyReturnsTheSameNotification() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let body = #"{"message": "x", "all": true, "idempotency_key": "order-42"}"#
            let first = try await client.signed(.post, "/api/v1/notifications", body: body, as: app.serverCredential)
            #expect(first.status == .accepted)
            let again = try await client.signed(.post, "/api/v1/notifications", body: body, as: app.serverCredential)
            #expect(again.status == .ok)
            #expect(again.json["id"] == first.json["id"])
            let noKey = try await client.signed(.post, "/api/v1/notifications", body: #"{"message": "y", "all": true}"#, as: app.serverCredential)
            #expect(noKey.json["id"] != first.json["id"])
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 2)

            // The same key with another body is another request: refused, nothing created, the first untouched.
            let changed = try await client.signed(
                .post, "/api/v1/notifications", body: #"{"message": "x", "all": true, "idempotency_key": "order-42", "badge": 1}"#,
                as: app.serverCredential
            )
            #expect(changed.status == .unprocessableContent)
            #expect(changed.errorCode == "idempotency_key_reused")
            #expect(changed.errorField == "idempotency_key")
            #expect(changed.json["error"]?["message"]?.stringValue?.contains("\(first.json["id"]?.intValue ?? -1)") == true)
            // Key order and whitespace do not make another request.
            let reordered = try await client.signed(
                .post, "/api/v1/notifications", body: #"{"idempotency_key":"order-42","all":true,"message":"x"}"#, as: app.serverCredential
            )
            #expect(reordered.status == .ok)
            #expect(reordered.json["id"] == first.json["id"])
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 2)
        }
    }

    /// The `Idempotency-Key` header works as the body's key does.
    @Test func theIdempotencyKeyHeaderNamesTheSameNotification() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            func post(_ body: String, key: String?) async throws -> TestResponse {
                var headers = signedHeaders(method: .post, path: "/api/v1/notifications", body: body, credential: app.serverCredential)
                if let key { headers.append(HTTPField(name: HTTPField.Name("Idempotency-Key")!, value: key)) }
                return try await client.execute(uri: "/api/v1/notifications", method: .post, headers: headers, body: ByteBuffer(string: body))
            }
            let body = #"{"message": "x", "all": true}"#
            let first = try await post(body, key: "retry-7")
            #expect(first.status == .accepted)
            let retry = try await post(body, key: "retry-7")
            #expect(retry.status == .ok)
            #expect(retry.json["id"] == first.json["id"])
            // The header and the body's key are one key.
            let inBody = try await post(#"{"message": "x", "all": true, "idempotency_key": "retry-7"}"#, key: nil)
            #expect(inBody.json["id"] == first.json["id"])
            let changed = try await post(#"{"message": "other", "all": true}"#, key: "retry-7")
            #expect(changed.status == .unprocessableContent)
            #expect(changed.errorCode == "idempotency_key_reused")
            #expect(changed.errorField == "Idempotency-Key")
            let otherKey = try await post(body, key: "retry-8")
            #expect(otherKey.status == .accepted)
            #expect(otherKey.json["id"] != first.json["id"])
            // Two keys that disagree: neither is silently preferred.
            let conflicting = try await post(#"{"message": "x", "all": true, "idempotency_key": "retry-9"}"#, key: "retry-10")
            #expect(conflicting.status == .unprocessableContent && conflicting.errorCode == "idempotency_key_conflict")
            #expect(conflicting.errorField == "Idempotency-Key")
            let agreeing = try await post(#"{"message": "x", "all": true, "idempotency_key": "retry-7"}"#, key: "retry-7")
            #expect(agreeing.json["id"] == first.json["id"])
            let tooLong = try await post(body, key: String(repeating: "k", count: 256))
            #expect(tooLong.status == .unprocessableContent)
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 2)
        }
    }

    @Test func cancelStopsWhatHasNotBeenSent() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            // No workers run here, so everything is still pending when it is cancelled.
            let app = try await service.createApp()
            try await service.insertDevices(appID: app.app.id, count: 50, tokenSeed: 0xCA)
            let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "all": true}"#)
            var job = try #require(try await FanOutStore(client: service.postgres, logger: TestDatabase.logger).claim(lease: .seconds(5)))
            _ = try await FanOutStore(client: service.postgres, logger: TestDatabase.logger).advance(&job, batchSize: 20, lease: .seconds(5))
            #expect(try await service.deliveries(of: id, in: "available") == 20)

            let cancelled = try await client.signed(.delete, "/api/v1/notifications/\(id)", as: app.serverCredential)
            #expect(cancelled.status == .ok)
            #expect(cancelled.json["state"]?.stringValue == "cancelled")
            #expect(cancelled.json["counters"]?["cancelled"]?.intValue == 20)
            // The fan-out stops: no more deliveries are created for it.
            #expect(try await FanOutStore(client: service.postgres, logger: TestDatabase.logger).advance(&job, batchSize: 20, lease: .seconds(5)) == nil)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(id)") == 20)
        }
    }

    @Test func deviceCredentialsCannotSendOrReadNotifications() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let send = try await client.signed(.post, "/api/v1/notifications", body: #"{"message": "x", "all": true}"#, as: app.deviceCredential)
            #expect(send.status == .forbidden)
            #expect(send.errorCode == "server_credentials_required")
            let list = try await client.signed(.get, "/api/v1/notifications", as: app.deviceCredential)
            #expect(list.status == .forbidden)
            let noTarget = try await client.signed(.post, "/api/v1/notifications", body: #"{"message": "x"}"#, as: app.serverCredential)
            #expect(noTarget.status == .unprocessableContent)
            #expect(noTarget.errorCode == "no_target")
        }
    }
}

@Suite struct NotificationListingTests {
    @Test func listingIsNewestFirstPagedAndCarriesEachNotificationsCounters() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x1157))
            var ids: [Int64] = []
            for n in 0..<5 {
                ids.append(try await Pipeline.send(client, app.serverCredential, #"{"message": "\#(n)", "device_ids": [\#(device)]}"#))
            }
            // Fan out by hand (no workers here) so each has one pending delivery.
            let fanOut = FanOutStore(client: service.postgres, logger: TestDatabase.logger)
            while var job = try await fanOut.claim(lease: .seconds(5)) {
                while try await fanOut.advance(&job, batchSize: 100, lease: .seconds(5)) != nil {}
            }
            let first = try await client.signed(.get, "/api/v1/notifications?limit=3", as: app.serverCredential)
            let page = try #require(first.json["data"]?.arrayValue)
            #expect(page.compactMap { $0["id"]?.intValue } == Array(ids.reversed().prefix(3)))
            #expect(page.allSatisfy { $0["counters"]?["pending"]?.intValue == 1 })
            let cursor = try #require(first.json["next_cursor"]?.stringValue)
            let second = try await client.signed(.get, "/api/v1/notifications?limit=3&cursor=\(cursor)", as: app.serverCredential)
            #expect(second.json["data"]?.arrayValue?.compactMap { $0["id"]?.intValue } == Array(ids.reversed().dropFirst(3)))
            #expect(second.json["next_cursor"] == .null)
            let bad = try await client.signed(.get, "/api/v1/notifications?cursor=abc", as: app.serverCredential)
            #expect(bad.status == .unprocessableContent)
        }
    }
}
