import Crypto
import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// Sync signals on the queue, driven by hand: at most one waits per device and notification,
/// and one that a newer signal supersedes is never sent.
@Suite struct SyncQueueRulesTests {
    @Test func aRetryingSignalThatANewerOneSupersedesIsCancelledAtClaim() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let phone = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x5A), alias: "erin")
            let tablet = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x5B), alias: "erin")
            let id = try await Pipeline.send(client, app.serverCredential, #"{"title": "x", "user_aliases": ["erin"], "stateful": true}"#)
            try await Pipeline.fanOut(service)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            let pushes = try await queue.claim(limit: 10, lease: .seconds(30))
            #expect(pushes.count == 2)
            try await queue.record(pushes.map { DeliveryResult(deliveryID: $0.id, attempt: $0.attempt, state: .sent) })

            let store = UserNotificationStore(client: service.postgres, logger: TestDatabase.logger, syncDelay: .zero)
            // Two changes before any worker looks: one signal, carrying the second.
            _ = try await store.update(appID: app.app.id, userAlias: "erin", notificationID: id, readState: .read, actionState: nil, deviceID: phone)
            _ = try await store.update(appID: app.app.id, userAlias: "erin", notificationID: id, readState: nil, actionState: .dismissed, deviceID: phone)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE kind = 'sync'") == 1)
            let first = try await queue.claim(limit: 10, lease: .seconds(30))
            try #require(first.count == 1)
            #expect(first[0].deviceID == tablet)
            #expect(first[0].content.parameters["n_user_action_state"] == .string("dismissed"))
            #expect(first[0].content.isBackgroundOnly)

            // It fails transiently; meanwhile the user changes the state again.
            try await queue.record([DeliveryResult(deliveryID: first[0].id, attempt: first[0].attempt, state: .retrying, runAt: Date())])
            _ = try await store.update(appID: app.app.id, userAlias: "erin", notificationID: id, readState: .unread, actionState: nil, deviceID: phone)
            let second = try await queue.claim(limit: 10, lease: .seconds(30))
            try #require(second.count == 1, "only the newer signal goes")
            #expect(second[0].id != first[0].id)
            #expect(second[0].content.parameters["n_read_state"] == .string("unread"))
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE id = \(first[0].id) AND state = 'cancelled'") == 1)

            // The notification's counters count its pushes only; dead signals are not re-queued.
            let counters = try await client.signed(.get, "/api/v1/notifications/\(id)", as: app.serverCredential).json["counters"]
            #expect(counters?["targeted"]?.intValue == 2)
            try await queue.record([DeliveryResult(deliveryID: second[0].id, attempt: second[0].attempt, state: .dead)])
            #expect(try await QueueAdminStore(client: service.postgres, logger: TestDatabase.logger).requeueDead(appID: app.app.id, ids: nil) == 0)
        }
    }

    @Test func aNewerSignalWaitsWhileAnOlderOneIsInFlight() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let phone = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x6A), alias: "ivy")
            _ = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x6B), alias: "ivy")
            let id = try await Pipeline.send(client, app.serverCredential, #"{"title": "x", "user_aliases": ["ivy"], "stateful": true}"#)
            try await Pipeline.fanOut(service)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            let pushes = try await queue.claim(limit: 10, lease: .seconds(30))
            try await queue.record(pushes.map { DeliveryResult(deliveryID: $0.id, attempt: $0.attempt, state: .sent) })

            let store = UserNotificationStore(client: service.postgres, logger: TestDatabase.logger, syncDelay: .zero)
            _ = try await store.update(appID: app.app.id, userAlias: "ivy", notificationID: id, readState: .read, actionState: nil, deviceID: phone)
            // Background pushes queue at normal priority, behind what the user sees.
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE kind = 'sync' AND priority = 5") == 1)
            let older = try await queue.claim(limit: 10, lease: .seconds(30))
            try #require(older.count == 1)
            _ = try await store.update(appID: app.app.id, userAlias: "ivy", notificationID: id, readState: .unread, actionState: nil, deviceID: phone)
            #expect(try await queue.claim(limit: 10, lease: .seconds(30)).isEmpty, "not while the older one is in flight")
            try await queue.record([DeliveryResult(deliveryID: older[0].id, attempt: older[0].attempt, state: .sent)])
            let newer = try await queue.claim(limit: 10, lease: .seconds(30))
            try #require(newer.count == 1)
            #expect(newer[0].content.parameters["n_read_state"] == .string("unread"))
        }
    }

    /// The SDKs' opened report changes the user's state only for the device's own user, and
    /// where the app requires verified aliases, only with that user's token.
    @Test func anOpenedReportChangesStateOnlyForTheDevicesVerifiedUser() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x7A), alias: "jo")
            let first = try await Pipeline.send(client, app.serverCredential, #"{"title": "x", "user_aliases": ["jo"], "stateful": true}"#)
            let second = try await Pipeline.send(client, app.serverCredential, #"{"title": "y", "user_aliases": ["jo"], "stateful": true}"#)
            try await Pipeline.fanOut(service)
            func state(_ id: Int64) async throws -> String {
                let row = try await service.postgres.query(
                    "SELECT read_state || ' ' || user_action_state FROM user_notifications WHERE notification_id = \(id)", logger: TestDatabase.logger
                )
                for try await text in row.decode(String.self) { return text }
                return "none"
            }
            func opened(_ id: Int64, alias: String?, token: String? = nil) async throws -> Int {
                let user = alias.map { #", "user": {"alias": "\#($0)"}"# } ?? ""
                let userToken = token.map { #", "user_token": "\#($0)""# } ?? ""
                return Int(
                    try await client.signed(
                        .post, "/api/v1/notifications/\(id)/opened", body: #"{"device_token_id": \#(device)\#(user)\#(userToken)}"#, as: app.deviceCredential
                    ).status.code)
            }

            // Without naming the user, the report counts but changes no one's state.
            #expect(try await opened(first, alias: nil) == 200)
            #expect(try await state(first) == "unread no_interaction")
            #expect(try await opened(first, alias: "jo") == 200)
            #expect(try await state(first) == "read activated")

            // With verified aliases required, only with jo's token.
            #expect(try await client.admin(.patch, "/admin/apps/\(app.app.id)", body: #"{"require_verified_alias": true}"#, service: service).status == .ok)
            #expect(try await opened(second, alias: "jo") == 200)
            #expect(try await state(second) == "unread no_interaction")
            let jo = try await client.userToken(for: "jo", as: app.serverCredential)
            #expect(try await opened(second, alias: "jo", token: jo) == 200)
            #expect(try await state(second) == "read activated")
        }
    }
}

/// A browser shows every push it is sent, so a user's browsers get the notification but never its
/// silent sync signals, and their device answers say they are on the web.
@Suite struct SyncSignalsSkipBrowsersTests {
    @Test func aUsersBrowserGetsNoSyncSignal() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let phone = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x7A), alias: "kim")
            let point = Base64URL.encode(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
            let browser = try await client.signed(
                .post, "/api/v1/device_tokens",
                body:
                    #"{"provider": "webpush", "token": "https://updates.push.services.mozilla.com/wpush/v2/kim", "keys": {"p256dh": "\#(point)", "auth": "AAECAwQFBgcICQoLDA0ODw"}, "user_alias": "kim"}"#,
                as: app.deviceCredential)
            #expect(browser.status == .ok, "\(String(buffer: browser.body))")
            #expect(browser.json["platform"]?.stringValue == "web")
            let browserID = try #require(browser.json["id"]?.intValue)
            _ = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x7B), alias: "kim")
            let id = try await Pipeline.send(client, app.serverCredential, #"{"title": "x", "user_aliases": ["kim"], "stateful": true}"#)
            try await Pipeline.fanOut(service)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(id) AND kind = 'push'") == 3)
            let store = UserNotificationStore(client: service.postgres, logger: TestDatabase.logger, syncDelay: .zero)
            _ = try await store.update(appID: app.app.id, userAlias: "kim", notificationID: id, readState: .read, actionState: nil, deviceID: phone)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE kind = 'sync'") == 1, "the tablet's only")
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE kind = 'sync' AND device_id = \(browserID)") == 0)
        }
    }
}
