import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// Queue rules driven by hand (no workers), over a database of its own.
@Suite struct QueueRulesTests {
    @Test func aDeliveryWhoseDeviceWentAwayWhileItWasInFlightIsNotSentAgain() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let (device, id) = try await Pipeline.queuedPush(client, service, app, token: Pipeline.token(0x60E))
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            let claimed = try await queue.claim(limit: 10, lease: .seconds(30))
            #expect(claimed.count == 1)

            // Unregistered while its push was in flight; the push then failed transiently.
            let deleted = try await client.signed(.delete, "/api/v1/device_tokens/\(device)", as: app.deviceCredential)
            #expect(deleted.status == .noContent)
            let delivery = try #require(claimed.first)
            try await queue.record([DeliveryResult(deliveryID: delivery.id, attempt: delivery.attempt, state: .retrying, runAt: Date(), reason: "503")])

            #expect(try await queue.claim(limit: 10, lease: .seconds(30)).isEmpty)
            #expect(try await service.deliveries(of: id, in: "cancelled") == 1)
        }
    }

    /// Deliveries of one notification claimed together share the payloads written for it; another
    /// notification's never do.
    @Test func aBatchSharesRenderedPayloadsPerNotificationOnly() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            var devices: [Int64] = []
            for index in 0..<3 {
                devices.append(try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x5A0 + index)))
            }
            let ids = devices.map(String.init).joined(separator: ", ")
            let first = try await Pipeline.send(client, app.serverCredential, #"{"message": "one", "device_ids": [\#(ids)]}"#)
            let second = try await Pipeline.send(client, app.serverCredential, #"{"message": "two", "device_ids": [\#(ids)]}"#)
            try await Pipeline.fanOut(service)
            let claimed = try await DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger).claim(limit: 10, lease: .seconds(30))
            #expect(claimed.count == 6)
            let ofFirst = claimed.filter { $0.notificationID == first }
            let ofSecond = claimed.filter { $0.notificationID == second }
            #expect(ofFirst.count == 3 && ofSecond.count == 3)
            #expect(ofFirst.allSatisfy { $0.rendered === ofFirst[0].rendered })
            #expect(ofSecond.allSatisfy { $0.rendered === ofSecond[0].rendered })
            #expect(ofFirst[0].rendered !== ofSecond[0].rendered)
        }
    }

    /// A worker still sending renews its batch's lease; only deliveries whose worker stopped
    /// renewing go back to the queue.
    @Test func aRenewedLeaseIsNotRescuedAndAnAbandonedOneIs() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let first = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x1EA5E1))
            let second = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x1EA5E2))
            let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "device_ids": [\#(first), \#(second)]}"#)
            try await Pipeline.fanOut(service)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            let claimed = try await queue.claim(limit: 10, lease: .seconds(1))
            #expect(claimed.count == 2)
            let kept = try #require(claimed.first { $0.deviceID == first })

            try await Task.sleep(for: .milliseconds(500))
            #expect(try await queue.extendLeases([kept], lease: .seconds(30)) == [kept.id])
            try await Task.sleep(for: .milliseconds(800))
            #expect(try await queue.rescueExpiredLeases(policy: RetryPolicy(maxAttempts: 5)) == 1)
            #expect(try await service.deliveries(of: id, in: "running") == 1)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE device_id = \(first) AND state = 'running'") == 1)

            // Once recorded, a delivery's lease is not renewed any more.
            try await queue.record([DeliveryResult(deliveryID: kept.id, attempt: kept.attempt, state: .sent)])
            #expect(try await queue.extendLeases([kept], lease: .seconds(30)).isEmpty)
        }
    }

    /// An attempt without an answer after its request may have left, and a lease that ran out in a
    /// worker's hands, are counted on the delivery: only they can have shown a push twice.
    @Test func attemptsOfUnknownOutcomeAreCountedOnTheDelivery() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let (_, id) = try await Pipeline.queuedPush(client, service, app, token: Pipeline.token(0x0DD1))
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            @Sendable func unknownOutcomes() async throws -> Int64? {
                try await service.integer("SELECT unknown_outcomes FROM deliveries WHERE notification_id = \(id)")
            }

            let first = try #require(try await queue.claim(limit: 10, lease: .seconds(30)).first)
            var timedOut = DeliveryResult(deliveryID: first.id, attempt: first.attempt, state: .retrying, runAt: Date(), reason: "request deadline exceeded")
            timedOut.outcomeUnknown = true
            try await queue.record([timedOut])
            #expect(try await unknownOutcomes() == 1)

            // Lease ran out in a worker's hands: rescued and counted; the worker's late record is
            // ignored, and the delivery is claimed (and sent) again.
            let second = try #require(try await queue.claim(limit: 10, lease: .milliseconds(1)).first)
            try await Task.sleep(for: .milliseconds(20))
            #expect(try await queue.rescueExpiredLeases(policy: RetryPolicy(maxAttempts: 8)) == 1)
            #expect(try await unknownOutcomes() == 2)
            #expect(
                try await service.text("SELECT reason FROM deliveries WHERE notification_id = \(id)")
                    == "\(DeliveryDecision.leaseRanOutReason) after: request deadline exceeded")
            try await queue.record([DeliveryResult(deliveryID: second.id, attempt: second.attempt, state: .sent)])
            #expect(try await service.deliveries(of: id, in: "sent") == 0)
            let third = try #require(try await queue.claim(limit: 10, lease: .seconds(30)).first)
            #expect(third.attempt == second.attempt + 1)

            // Given back unsent: ready again at once, and not counted as of unknown outcome. Its claim
            // still counts, so the same record applied twice cannot touch the next claim.
            let givenBack = DeliveryResult.givenBack(third, reason: "given back unsent")
            try await queue.record([givenBack])
            let fourth = try #require(try await queue.claim(limit: 10, lease: .seconds(30)).first)
            #expect(fourth.attempt == third.attempt + 1)
            try await queue.record([givenBack])
            #expect(try await service.deliveries(of: id, in: "running") == 1, "a give-back recorded twice released a later claim")
            #expect(try await unknownOutcomes() == 2)
        }
    }

    @Test func aCancelledNotificationsRetryingDeliveriesAreNotSentAgain() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let (_, id) = try await Pipeline.queuedPush(client, service, app, token: Pipeline.token(0xCA1))
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            let delivery = try #require(try await queue.claim(limit: 10, lease: .seconds(30)).first)
            _ = try await client.signed(.delete, "/api/v1/notifications/\(id)", as: app.serverCredential)
            try await queue.record([DeliveryResult(deliveryID: delivery.id, attempt: delivery.attempt, state: .retrying, runAt: Date(), reason: "503")])
            #expect(try await queue.claim(limit: 10, lease: .seconds(30)).isEmpty)
            #expect(try await service.deliveries(of: id, in: "cancelled") == 1)
        }
    }

    @Test func mergingOntoATokenThatAlreadyHadTheNotificationDoesNotSendItAgain() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let tokenX = Pipeline.token(0xAA), tokenY = Pipeline.token(0xBB)
            let holder = try await Pipeline.register(client, app.deviceCredential, token: tokenX, alias: "alice")
            let mover = try await Pipeline.register(client, app.deviceCredential, token: tokenY, alias: "alice")
            let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "user_aliases": ["alice"]}"#)
            try await Pipeline.fanOut(service)
            // Token X already got it; Y's delivery is still waiting.
            try await service.postgres.query(
                "UPDATE deliveries SET state = 'sent', sent_at = now() WHERE notification_id = \(id) AND device_id = \(holder)",
                logger: TestDatabase.logger
            )
            let moved = try await client.signed(.patch, "/api/v1/device_tokens/\(mover)", body: #"{"token": "\#(tokenX)"}"#, as: app.deviceCredential)
            #expect(moved.status == .ok)
            #expect(
                try await service.integer(
                    "SELECT count(*) FROM deliveries WHERE notification_id = \(id) AND state IN ('available', 'retrying')"
                ) == 0)
        }
    }

    @Test func lengthsAreCountedAsPostgreSQLCountsThem() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            // 200 flags: 200 characters to a person, 400 code points to PostgreSQL.
            let flags = String(repeating: "🇬🇧", count: 200)
            let response = try await client.signed(
                .post, "/api/v1/device_tokens",
                body: #"{"provider": "apns", "token": "\#(Pipeline.token(0xF1A6))", "name": "\#(flags)"}"#,
                as: app.deviceCredential
            )
            #expect(response.status == .unprocessableContent)
            #expect(response.errorField == "name")
        }
    }
}

@Suite struct AdminQueueTests {
    @Test func queueDepthByStateAndTheAgeOfTheOldestReadyDelivery() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let admin = try #require(service.configuration.adminToken)
            let unauthenticated = try await client.execute(uri: "/admin/queue", method: .get, headers: [:], body: nil)
            #expect(unauthenticated.status == .unauthorized)
            let wrong = try await client.execute(uri: "/admin/queue", method: .get, headers: [.authorization: "Bearer not-the-token"], body: nil)
            #expect(wrong.errorCode == "invalid_admin_token")

            let app = try await service.createApp()
            try await service.insertDevices(appID: app.app.id, count: 3, tokenSeed: 0xDE97)
            _ = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "all": true}"#)
            let queued = try await client.execute(uri: "/admin/queue", method: .get, headers: [.authorization: "Bearer \(admin)"], body: nil)
            #expect(queued.json["notifications_fanning_out"]?.intValue == 1)
            #expect(queued.json["deliveries"]?["available"]?.intValue == 0)

            try await Pipeline.fanOut(service)
            // Make the deliveries ready for a while, as if no worker had come by.
            try await service.postgres.query("UPDATE deliveries SET run_at = now() - interval '90 seconds'", logger: TestDatabase.logger)
            let stats = try await client.execute(uri: "/admin/queue", method: .get, headers: [.authorization: "Bearer \(admin)"], body: nil)
            #expect(stats.json["notifications_fanning_out"]?.intValue == 0)
            #expect(stats.json["deliveries"]?["available"]?.intValue == 3)
            #expect(stats.json["deliveries"]?["sent"]?.intValue == 0)
            let age = try #require(stats.json["oldest_ready_age_seconds"])
            let seconds: Double =
                switch age {
                case .number(let value): value
                case .integer(let value): Double(value)
                default: -1
                }
            #expect(seconds >= 90 && seconds < 120, "\(seconds)")
        }
    }
}

@Suite struct FanOutLeaseTests {
    /// A notification accepted during another's fan-out turn is claimed before that one goes on;
    /// the one that gave up its turn is claimed next, where it left off, with the window it grew.
    @Test func aNotificationAcceptedDuringATurnIsFannedOutBeforeTheTurnsNotificationGoesOn() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            try await service.insertDevices(appID: app.app.id, count: 30, tokenSeed: 0x7E1)
            let broadcast = try await Pipeline.send(client, app.serverCredential, #"{"message": "all", "all": true}"#)
            let fanOut = FanOutStore(client: service.postgres, logger: TestDatabase.logger)
            var job = try #require(try await fanOut.claim(lease: .seconds(60)))
            #expect(job.notificationID == broadcast)
            #expect(try await fanOut.advance(&job, batchSize: 10, lease: .seconds(60)) == 10)
            job.window *= 4  // what a sparse audience's batches would have grown it to

            let single = try await Pipeline.send(client, app.serverCredential, #"{"message": "one", "all": true}"#)
            try await fanOut.endTurn(job)
            var next = try #require(try await fanOut.claim(lease: .seconds(60), after: job))
            #expect(next.notificationID == single)
            while try await fanOut.advance(&next, batchSize: 100, lease: .seconds(60)) != nil {}

            let resumed = try #require(try await fanOut.claim(lease: .seconds(60), after: job))
            #expect(resumed.notificationID == broadcast && resumed.cursor == job.cursor && resumed.window == job.window)
        }
    }

    @Test func aReleasedFanOutCanBeTakenOverAtOnceAndResumesFromItsCursor() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            try await service.insertDevices(appID: app.app.id, count: 30, tokenSeed: 0x1EA5E)
            _ = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "all": true}"#)
            let fanOut = FanOutStore(client: service.postgres, logger: TestDatabase.logger)
            var job = try #require(try await fanOut.claim(lease: .seconds(60)))
            #expect(try await fanOut.advance(&job, batchSize: 10, lease: .seconds(60)) == 10)
            // Held: nobody else may take it.
            #expect(try await fanOut.claim(lease: .seconds(60)) == nil)
            try await fanOut.release(job)
            var resumed = try #require(try await fanOut.claim(lease: .seconds(60)))
            #expect(resumed.cursor == job.cursor)
            while try await fanOut.advance(&resumed, batchSize: 10, lease: .seconds(60)) != nil {}
            #expect(try await service.integer("SELECT count(*) FROM deliveries") == 30)
        }
    }
}
