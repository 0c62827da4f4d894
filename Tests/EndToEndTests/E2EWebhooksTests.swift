import Foundation
import HummingbirdTesting
import NotifiableApp
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Synchronization
import Testing

@testable import NotifiableDelivery

/// Webhooks end to end: pushes through the fake APNs, status reports through the SDK
/// endpoints, events POSTed by the worker to a local receiver that checks every signature.
@Suite struct E2EWebhooksTests {
    static let token = Pipeline.token

    /// The service with workers over a database of its own, with webhook settings of the test's choosing.
    static func withService<T: Sendable>(
        pauseAfter: Int = 50, requestTimeout: Duration = .seconds(5), retryDelay: Duration? = nil,
        _ body: @Sendable (any TestClientProtocol, TestService) async throws -> T
    ) async throws -> T {
        var configuration = try TestDatabase.serverConfiguration()
        configuration.runsWorkers = true
        configuration.webhooks.pauseAfter = pauseAfter
        configuration.webhooks.requestTimeout = requestTimeout
        if let retryDelay {
            configuration.webhooks.retryPolicy = RetryPolicy(maxAttempts: .max, baseDelay: retryDelay, maxDelay: retryDelay, jitter: 0)
        }
        let shared = configuration
        return try await TestDatabase.withFreshDatabase { url in
            var isolated = shared
            isolated.databaseURL = url
            let postgres = try makeDatabase(isolated, logger: TestDatabase.logger)
            let app = try buildApplication(isolated, postgres: postgres, logger: TestDatabase.logger)
            let service = TestService(postgres: postgres, configuration: isolated)
            return try await app.test(.router) { client in try await body(client, service) }
        }
    }

    static func withReceiver<T: Sendable>(_ body: @Sendable (FakeWebhookReceiver) async throws -> T) async throws -> T {
        let receiver = try await FakeWebhookReceiver.start()
        do {
            let result = try await body(receiver)
            try await receiver.stop()
            return result
        } catch {
            try? await receiver.stop()
            throw error
        }
    }

    /// Registers a webhook through the admin API; answers its id and secret.
    static func register(
        _ client: some TestClientProtocol, _ service: TestService, appID: Int64, url: String,
        events: String = ""
    ) async throws -> (id: Int64, secret: String) {
        let eventsField = events.isEmpty ? "" : #", "events": \#(events)"#
        let created = try await client.admin(.post, "/admin/apps/\(appID)/webhooks", body: #"{"url": "\#(url)"\#(eventsField)}"#, service: service)
        #expect(created.status == .created, "\(String(buffer: created.body))")
        let secret = try #require(created.json["secret"]?.stringValue)
        return (try #require(created.json["id"]?.intValue), secret)
    }

    /// Every event a receiver took (2xx answers only), in arrival order, after checking each
    /// request's signature and headers.
    static func acceptedEvents(_ receiver: FakeWebhookReceiver, secret: String, webhookID: Int64) -> [JSONValue] {
        var events: [JSONValue] = []
        for request in receiver.received {
            let signature = request.headers["x-notifiable-signature"] ?? ""
            #expect(
                WebhookSignature.verify(header: signature, secret: secret, body: request.body, now: Int64(Date().timeIntervalSince1970)),
                "signature \(signature) does not sign \(String(decoding: request.body, as: UTF8.self))")
            #expect(!WebhookSignature.verify(header: signature, secret: secret + "x", body: request.body, now: Int64(Date().timeIntervalSince1970)))
            #expect(request.method == "POST")
            #expect(request.headers["x-notifiable-webhook-id"] == String(webhookID))
            #expect(request.headers["x-notifiable-batch-id"].flatMap(Int64.init) != nil)
            #expect(request.headers["content-type"] == "application/json")
            guard (200..<300).contains(request.status) else { continue }
            let body = try? JSONValue.decode(request.body)
            events += body?["events"]?.arrayValue ?? []
        }
        return events
    }

    @Test func aReceiverGetsEveryEventOnceSignedWithWhatHappened() async throws {
        try await Self.withReceiver { receiver in
            try await withFakeAPNs { gateway in
                try await Self.withService { client, service in
                    let app = try await service.createApp()
                    let quiet = try await service.createApp(name: "No webhooks")
                    try await service.connectAPNs(appID: app.app.id, to: gateway)
                    try await service.connectAPNs(appID: quiet.app.id, to: gateway)
                    let webhook = try await Self.register(client, service, appID: app.app.id, url: receiver.url)

                    let alice = try await Pipeline.register(client, app.deviceCredential, token: Self.token(0xA1), alias: "alice")
                    let gone = try await Pipeline.register(client, app.deviceCredential, token: Self.token(0x60), alias: "bob")
                    gateway.script(token: Self.token(0x60), [.unregistered(since: Date())])
                    let elsewhere = try await Pipeline.register(client, quiet.deviceCredential, token: Self.token(0xE1), alias: "alice")

                    let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "Hi", "user_aliases": ["alice", "bob"]}"#)
                    let other = try await Pipeline.send(client, quiet.serverCredential, #"{"message": "Hi", "user_aliases": ["alice"]}"#)
                    #expect(try await Pipeline.settled(service, id))
                    #expect(try await Pipeline.settled(service, other))
                    for _ in 0..<2 {
                        let opened = try await client.signed(
                            .post, "/api/v1/notifications/\(id)/opened", body: #"{"device_token_id": "\#(alice)", "user": {"alias": "alice"}}"#,
                            as: app.deviceCredential)
                        #expect(opened.status == .ok)
                        let delivered = try await client.signed(
                            .post, "/api/v1/notifications/\(id)/delivered", body: #"{"device_token_id": \#(alice)}"#, as: app.deviceCredential)
                        #expect(delivered.status == .ok)
                    }
                    _ = try await client.signed(
                        .post, "/api/v1/notifications/\(other)/opened", body: #"{"device_token_id": \#(elsewhere), "user": {"alias": "alice"}}"#,
                        as: quiet.deviceCredential)

                    let expected: Set<String> = [
                        "sent \(alice)", "failed \(gone)", "invalidated \(gone)", "delivered \(alice)", "opened \(alice)",
                    ]
                    #expect(
                        try await service.eventually {
                            Self.acceptedEvents(receiver, secret: webhook.secret, webhookID: webhook.id).count >= expected.count
                        })
                    // Anything sent twice would arrive within a few polls.
                    try await Task.sleep(for: .milliseconds(500))
                    let events = Self.acceptedEvents(receiver, secret: webhook.secret, webhookID: webhook.id)
                    let ids = events.compactMap { $0["event_id"]?.intValue }
                    #expect(ids.count == events.count)
                    #expect(Set(ids).count == ids.count, "an event arrived twice: \(ids)")
                    #expect(ids == ids.sorted())
                    #expect(Set(events.map { "\($0["type"]?.stringValue ?? "?") \($0["device_id"]?.intValue ?? 0)" }) == expected)
                    #expect(events.count == expected.count)

                    let failed = try #require(events.first { $0["type"]?.stringValue == "failed" })
                    #expect(failed["notification_id"]?.intValue == id)
                    #expect(failed["user_alias"]?.stringValue == "bob")
                    #expect(failed["reason"]?.stringValue?.contains("Unregistered") == true)
                    #expect(failed["delivery_id"]?.intValue != nil)
                    let opened = try #require(events.first { $0["type"]?.stringValue == "opened" })
                    #expect(opened["notification_id"]?.intValue == id)
                    #expect(opened["user_alias"]?.stringValue == "alice")
                    #expect(opened["occurred_at"]?.stringValue?.hasSuffix("Z") == true)
                    let invalidated = try #require(events.first { $0["type"]?.stringValue == "invalidated" })
                    #expect(invalidated["reason"]?.stringValue?.contains("Unregistered") == true)
                    #expect(invalidated["notification_id"] == nil)

                    // The other app has no webhook: its pushes and reports recorded nothing.
                    #expect(try await service.integer("SELECT count(*) FROM webhook_events") == Int64(expected.count))
                    // A batch is recorded delivered after the receiver has answered: wait for the record.
                    #expect(
                        try await service.eventually {
                            try await service.integer("SELECT count(*) FROM webhook_batches WHERE state <> 'delivered'") == 0
                        })
                    let batches = try await client.admin(.get, "/admin/apps/\(app.app.id)/webhooks/\(webhook.id)/batches", service: service)
                    #expect(batches.status == .ok)
                    let listed = batches.json["data"]?.arrayValue ?? []
                    #expect(listed.allSatisfy { $0["state"]?.stringValue == "delivered" && $0["last_status"]?.intValue == 200 })
                    #expect(listed.reduce(0) { $0 + ($1["event_count"]?.intValue ?? 0) } == Int64(expected.count))
                }
            }
        }
    }

    @Test func aReceiverDownForAWhileGetsTheBacklogInOrderWhenItReturns() async throws {
        try await Self.withReceiver { receiver in
            try await withFakeAPNs { gateway in
                // Not paused while down: a starved machine may take long to settle the 250 pushes,
                // and a pause is another test's subject.
                try await Self.withService(pauseAfter: 10_000) { client, service in
                    let app = try await service.createApp()
                    try await service.connectAPNs(appID: app.app.id, to: gateway)
                    receiver.answer(503, retryAfter: "0")
                    let webhook = try await Self.register(client, service, appID: app.app.id, url: receiver.url, events: #"["sent"]"#)
                    try await service.insertDevices(appID: app.app.id, count: 250, tokenSeed: 0xB0)
                    let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "Backlog", "all": true}"#)
                    #expect(try await Pipeline.settled(service, id))
                    // Down: attempts keep failing, nothing is lost.
                    #expect(try await service.eventually { receiver.received.count >= 3 })
                    #expect(try await service.integer("SELECT count(*) FROM webhook_events") == 250)

                    receiver.answer(200)
                    #expect(
                        try await service.eventually {
                            Self.acceptedEvents(receiver, secret: webhook.secret, webhookID: webhook.id).count >= 250
                        })
                    try await Task.sleep(for: .milliseconds(500))
                    let events = Self.acceptedEvents(receiver, secret: webhook.secret, webhookID: webhook.id)
                    let ids = events.compactMap { $0["event_id"]?.intValue }
                    #expect(ids.count == 250)
                    #expect(ids == ids.sorted(), "out of order")
                    #expect(Set(ids).count == 250, "an event arrived twice")
                    #expect(Set(events.compactMap { $0["delivery_id"]?.intValue }).count == 250)

                    let first = try await client.admin(.get, "/admin/apps/\(app.app.id)/webhooks/\(webhook.id)/batches?limit=1000", service: service)
                    let batches = first.json["data"]?.arrayValue ?? []
                    #expect(batches.allSatisfy { ($0["event_count"]?.intValue ?? 0) <= 100 })
                    #expect(batches.reduce(0) { $0 + ($1["event_count"]?.intValue ?? 0) } == 250)
                    let oldest = try #require(batches.last)
                    #expect((oldest["attempts"]?.intValue ?? 0) >= 3)
                    #expect(oldest["state"]?.stringValue == "delivered")
                    let listed = try await client.admin(.get, "/admin/apps/\(app.app.id)/webhooks", service: service)
                    #expect(listed.json["data"]?[0]?["state"]?.stringValue == "active")
                    #expect(listed.json["data"]?[0]?["consecutive_failures"]?.intValue == 0)
                    #expect(listed.json["data"]?[0]?["secret"] == nil)
                }
            }
        }
    }

    @Test func aWebhookThatKeepsFailingIsPausedAndResumingSendsTheBacklog() async throws {
        try await Self.withReceiver { receiver in
            try await withFakeAPNs { gateway in
                try await Self.withService(pauseAfter: 3) { client, service in
                    let app = try await service.createApp()
                    try await service.connectAPNs(appID: app.app.id, to: gateway)
                    receiver.answer(500)
                    let webhook = try await Self.register(client, service, appID: app.app.id, url: receiver.url, events: #"["sent", "opened"]"#)
                    let device = try await Pipeline.register(client, app.deviceCredential, token: Self.token(0xC1), alias: "carol")
                    let first = try await Pipeline.send(client, app.serverCredential, #"{"message": "1", "device_ids": [\#(device)]}"#)
                    #expect(try await Pipeline.settled(service, first))

                    let base = "/admin/apps/\(app.app.id)/webhooks"
                    #expect(
                        try await service.eventually {
                            try await client.admin(.get, base, service: service).json["data"]?[0]?["state"]?.stringValue == "paused"
                        })
                    let paused = try await client.admin(.get, base, service: service).json["data"]?[0]
                    #expect(paused?["paused_reason"]?.stringValue?.contains("HTTP 500") == true)
                    #expect(paused?["paused_at"]?.stringValue != nil)
                    // Paused: no more attempts, but events keep accumulating.
                    try await Task.sleep(for: .milliseconds(600))
                    #expect(receiver.received.count == 3)
                    let second = try await Pipeline.send(client, app.serverCredential, #"{"message": "2", "device_ids": [\#(device)]}"#)
                    #expect(try await Pipeline.settled(service, second))
                    _ = try await client.signed(
                        .post, "/api/v1/notifications/\(second)/opened", body: #"{"device_token_id": \#(device), "user": {"alias": "carol"}}"#,
                        as: app.deviceCredential)
                    #expect(receiver.received.count == 3)
                    #expect(try await client.admin(.get, base, service: service).json["data"]?[0]?["pending_events"]?.intValue == 2)

                    receiver.answer(204)
                    let resumed = try await client.admin(.post, "\(base)/\(webhook.id)/resume", service: service)
                    #expect(resumed.status == .ok)
                    #expect(resumed.json["state"]?.stringValue == "active")
                    #expect(
                        try await service.eventually {
                            Self.acceptedEvents(receiver, secret: webhook.secret, webhookID: webhook.id).count >= 3
                        })
                    try await Task.sleep(for: .milliseconds(300))
                    let events = Self.acceptedEvents(receiver, secret: webhook.secret, webhookID: webhook.id)
                    #expect(
                        events.map { "\($0["type"]?.stringValue ?? "") \($0["notification_id"]?.intValue ?? 0)" }
                            == ["sent \(first)", "sent \(second)", "opened \(second)"])
                    let batches = try await client.admin(.get, "\(base)/\(webhook.id)/batches", service: service).json["data"]?.arrayValue ?? []
                    #expect(batches.last?["attempts"]?.intValue == 4)
                    #expect(batches.allSatisfy { $0["state"]?.stringValue == "delivered" })
                }
            }
        }
    }

    @Test func aReceiverThatDoesNotAnswerInTimeCountsAsAFailure() async throws {
        try await Self.withReceiver { receiver in
            try await withFakeAPNs { gateway in
                // The deadline is short, but long enough that the answer afterwards arrives within it
                // on a starved machine; the first answer comes far past it.
                try await Self.withService(requestTimeout: .seconds(2)) { client, service in
                    let app = try await service.createApp()
                    try await service.connectAPNs(appID: app.app.id, to: gateway)
                    receiver.answer(200, after: .seconds(10))
                    let webhook = try await Self.register(client, service, appID: app.app.id, url: receiver.url, events: #"["sent"]"#)
                    let device = try await Pipeline.register(client, app.deviceCredential, token: Self.token(0xF0))
                    let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "device_ids": [\#(device)]}"#)
                    #expect(try await Pipeline.settled(service, id))
                    let batches = "/admin/apps/\(app.app.id)/webhooks/\(webhook.id)/batches"
                    let timedOut = try await service.eventually {
                        let batch = try await client.admin(.get, batches, service: service).json["data"]?[0]
                        return batch?["state"]?.stringValue == "retrying" && batch?["last_status"] == .null
                            && batch?["last_error"]?.stringValue?.contains("deadline") == true
                    }
                    let listed = String(buffer: try await client.admin(.get, batches, service: service).body)
                    #expect(timedOut, "\(listed)")
                    receiver.answer(200)
                    #expect(
                        try await service.eventually {
                            try await client.admin(.get, batches, service: service).json["data"]?[0]?["state"]?.stringValue == "delivered"
                        })
                }
            }
        }
    }

    private static let trickleDeadline: Double = 15

    /// A receiver that sends its answer's head and then trickles the body: the deadline covers the
    /// whole exchange, and another app's webhook is served meanwhile, not after.
    @Test func aReceiverTricklingItsAnswerHoldsOnlyItsOwnBatchAndOnlyUntilTheDeadline() async throws {
        try await Self.withReceiver { slow in
            try await Self.withReceiver { prompt in
                try await withFakeAPNs { gateway in
                    // Long enough for the prompt app's whole chain (register, send, push, webhook) on a
                    // starved machine; the trickled answer would last hours without it.
                    try await Self.withService(requestTimeout: .seconds(Self.trickleDeadline), retryDelay: .seconds(600)) { client, service in
                        slow.trickle(byteEvery: .milliseconds(200))
                        let slowApp = try await service.createApp(name: "Slow receiver")
                        let promptApp = try await service.createApp(name: "Prompt receiver")
                        for app in [slowApp, promptApp] { try await service.connectAPNs(appID: app.app.id, to: gateway) }
                        let slowHook = try await Self.register(client, service, appID: slowApp.app.id, url: slow.url, events: #"["sent"]"#)
                        let promptHook = try await Self.register(client, service, appID: promptApp.app.id, url: prompt.url, events: #"["sent"]"#)

                        let slowDevice = try await Pipeline.register(client, slowApp.deviceCredential, token: Self.token(0xA1))
                        let slowID = try await Pipeline.send(client, slowApp.serverCredential, #"{"message": "x", "device_ids": [\#(slowDevice)]}"#)
                        #expect(try await Pipeline.settled(service, slowID))
                        // The slow receiver has the batch's head answered and is trickling.
                        #expect(try await service.eventually { !slow.received.isEmpty })
                        let trickleStarted = Date()

                        let promptDevice = try await Pipeline.register(client, promptApp.deviceCredential, token: Self.token(0xB1))
                        let promptID = try await Pipeline.send(client, promptApp.serverCredential, #"{"message": "y", "device_ids": [\#(promptDevice)]}"#)
                        #expect(try await Pipeline.settled(service, promptID))
                        #expect(try await service.eventually { !Self.acceptedEvents(prompt, secret: promptHook.secret, webhookID: promptHook.id).isEmpty })
                        // Served while the slow one was still within its deadline, not after its round.
                        #expect(Date().timeIntervalSince(trickleStarted) < Self.trickleDeadline, "the prompt receiver waited for the slow one")

                        // The slow attempt ends at its deadline, as a failure to retry. Timed by when the
                        // failure was recorded, not by when this loop saw it: a poll on a loaded machine
                        // can lag by seconds. The retry is far off, so the first failure stays in view.
                        let batches = "/admin/apps/\(slowApp.app.id)/webhooks/\(slowHook.id)/batches"
                        let failed = try await service.eventually {
                            let batch = try await client.admin(.get, batches, service: service).json["data"]?[0]
                            return batch?["state"]?.stringValue == "retrying" && batch?["last_error"]?.stringValue?.contains("deadline") == true
                        }
                        let listed = String(buffer: try await client.admin(.get, batches, service: service).body)
                        #expect(failed, "\(listed)")
                        let recordedMilliseconds = try #require(
                            try await service.integer(
                                "SELECT (extract(epoch FROM updated_at) * 1000)::int8 FROM webhook_batches WHERE webhook_id = \(slowHook.id) AND attempts = 1"
                            ))
                        let endedBy = Date(timeIntervalSince1970: Double(recordedMilliseconds) / 1000)
                        #expect(endedBy.timeIntervalSince(trickleStarted) < Self.trickleDeadline * 1.5, "the attempt outlived its deadline")
                    }
                }
            }
        }
    }

    /// NOTIFIABLE_WEBHOOK_PUBLIC_TARGETS_ONLY: webhooks to loopback, link-local and private
    /// addresses are refused when made (a name is resolved first) and before every POST.
    @Test func withPublicTargetsOnlyInternalAddressesAreRefused() async throws {
        var configuration = try TestDatabase.serverConfiguration()
        configuration.webhooks.targets = WebhookTargets(refusesInternalAddresses: true)
        let strict = configuration
        try await withTestService(configure: { $0 = strict }) { client, service in
            let app = try await service.createApp()
            for url in [
                "http://127.0.0.1:9/h", "http://localhost:8080/hooks", "http://[::1]/h", "http://169.254.169.254/latest", "https://10.0.0.5/h",
                // What getaddrinfo, and so the connection, reads as 10.0.0.1 and 127.0.0.1.
                "http://012.0.0.1/h", "http://0x7f.1/h", "http://2130706433/h",
            ] {
                let refused = try await client.admin(.post, "/admin/apps/\(app.app.id)/webhooks", body: #"{"url": "\#(url)"}"#, service: service)
                #expect(refused.status == .unprocessableContent, "\(url): \(String(buffer: refused.body))")
                #expect(refused.errorCode == "internal_webhook_target", "\(url)")
                #expect(refused.errorField == "url")
            }
            let unresolvable = try await client.admin(
                .post, "/admin/apps/\(app.app.id)/webhooks", body: #"{"url": "https://no-such-host.invalid/h"}"#, service: service)
            #expect(unresolvable.errorCode == "internal_webhook_target")
            let outside = try await client.admin(
                .post, "/admin/apps/\(app.app.id)/webhooks", body: #"{"url": "https://93.184.215.14/hooks"}"#, service: service)
            #expect(outside.status == .created, "\(String(buffer: outside.body))")
        }
        // Off (the default), loopback is a target like any other; a port out of range never is.
        try await withTestService { client, service in
            let app = try await service.createApp()
            let local = try await client.admin(.post, "/admin/apps/\(app.app.id)/webhooks", body: #"{"url": "http://127.0.0.1:9/h"}"#, service: service)
            #expect(local.status == .created)
            for port in ["0", "65536", "99999"] {
                let bad = try await client.admin(
                    .post, "/admin/apps/\(app.app.id)/webhooks", body: #"{"url": "http://example.com:\#(port)/h"}"#, service: service)
                #expect(bad.status == .unprocessableContent, "port \(port): \(String(buffer: bad.body))")
                #expect(bad.errorCode == "invalid_url", "port \(port)")
            }
        }
        // Before each POST the sender asks the same question, so a webhook made before the setting was
        // on, or a name that has come to resolve inside the network, is not POSTed to.
        let targets = WebhookTargets(refusesInternalAddresses: true)
        let localhost = await targets.refusal(of: "http://localhost:9/h") ?? ""
        #expect(localhost.contains("at 127.0.0.1") || localhost.contains("at ::1"), "\(localhost)")
        #expect(await targets.refusal(of: "http://8.8.8.8/h") == nil)
        #expect(await WebhookTargets(refusesInternalAddresses: false).refusal(of: "http://127.0.0.1/h") == nil)
    }

    @Test func operatorsAreToldWhatIsWrongAndSeeOnlyTheirAppsWebhooks() async throws {
        try await Self.withService { client, service in
            let app = try await service.createApp()
            let other = try await service.createApp(name: "Other")
            let base = "/admin/apps/\(app.app.id)/webhooks"
            func refusal(_ body: String) async throws -> (Int, String?, String?) {
                let answer = try await client.admin(.post, base, body: body, service: service)
                return (Int(answer.status.code), answer.errorCode, answer.json["error"]?["field"]?.stringValue)
            }
            #expect(try await refusal(#"{"url": "ftp://example.com/hook"}"#) == (422, "invalid_url", "url"))
            #expect(try await refusal(#"{"url": "https://user:pw@example.com/hook"}"#) == (422, "invalid_url", "url"))
            #expect(try await refusal(#"{"url": "not a url"}"#) == (422, "invalid_url", "url"))
            #expect(try await refusal(#"{"events": ["sent"]}"#) == (422, "missing_field", "url"))
            #expect(try await refusal(#"{"url": "https://example.com/h", "events": ["sent", "bounced"]}"#) == (422, "invalid_event", "events[1]"))
            #expect(try await refusal(#"{"url": "https://example.com/h", "events": []}"#) == (422, "invalid_events", "events"))
            #expect(try await refusal(#"{"url": "https://example.com/h", "events": "sent"}"#) == (422, "invalid_type", "events"))
            #expect(try await refusal(#"{"url": "https://example.com/h", "secret": "mine"}"#) == (422, "unknown_field", "secret"))
            #expect(try await refusal(#"{"url": "#) == (400, "malformed_json", nil))

            let created = try await client.admin(
                .post, base, body: #"{"url": "https://example.com/h", "events": ["opened", "sent", "opened"]}"#, service: service)
            #expect(created.status == .created)
            #expect(created.json["events"] == .array([.string("opened"), .string("sent")]))
            #expect(created.json["secret"]?.stringValue?.hasPrefix("whsec_") == true)
            let id = try #require(created.json["id"]?.intValue)
            // The secret is stored sealed, not in the clear.
            #expect(
                try await service.integer(
                    "SELECT count(*) FROM webhooks WHERE position(convert_to(\(created.json["secret"]?.stringValue ?? ""), 'UTF8') IN sealed_secret) > 0") == 0)

            let otherBase = "/admin/apps/\(other.app.id)/webhooks/\(id)"
            #expect(try await client.admin(.delete, otherBase, service: service).status == .notFound)
            #expect(try await client.admin(.post, "\(otherBase)/resume", service: service).status == .notFound)
            #expect(try await client.admin(.get, "\(otherBase)/batches", service: service).status == .notFound)
            #expect(try await client.admin(.get, "/admin/apps/\(other.app.id)/webhooks", service: service).json["data"]?.arrayValue?.isEmpty == true)
            #expect(try await client.admin(.get, "/admin/apps/999999999/webhooks", service: service).status == .notFound)
            #expect(
                try await client.admin(.post, "/admin/apps/999999999/webhooks", body: #"{"url": "https://example.com/h"}"#, service: service).status
                    == .notFound)
            #expect(try await client.execute(uri: base, method: .get).status == .unauthorized)

            #expect(try await client.admin(.delete, "\(base)/\(id)", service: service).status == .noContent)
            #expect(try await client.admin(.delete, "\(base)/\(id)", service: service).status == .notFound)
        }
    }

    @Test func eventsAreRecordedOncePerChangeForPushesOfAppsWithWebhooksOnly() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let quiet = try await service.createApp(name: "No webhooks")
            _ = try await Self.register(client, service, appID: app.app.id, url: "https://example.com/h", events: #"["sent", "dead", "delivered"]"#)
            try await service.insertDevices(appID: app.app.id, count: 2, tokenSeed: 0xD0, userAlias: "dana")
            try await service.insertDevices(appID: quiet.app.id, count: 1, tokenSeed: 0xD1)
            try await service.postgres.query(
                """
                WITH n AS (
                    INSERT INTO notifications (app_id, content, targeting, state)
                    SELECT id, '{"message": "x"}', '{}', 'fanned_out' FROM apps WHERE id IN (\(app.app.id), \(quiet.app.id)) RETURNING id, app_id
                )
                INSERT INTO deliveries (notification_id, app_id, device_id, kind, content)
                SELECT n.id, n.app_id, d.id, k.kind, CASE WHEN k.kind = 'sync' THEN '{}'::jsonb END
                FROM n JOIN devices d ON d.app_id = n.app_id CROSS JOIN (VALUES ('push'), ('sync')) AS k(kind)
                """,
                logger: TestDatabase.logger
            )
            let steps: [PostgresQuery] = [
                "UPDATE deliveries SET state = 'sent', sent_at = now()",
                // Changing nothing that matters records nothing.
                "UPDATE deliveries SET state = 'sent', updated_at = now()",
                "UPDATE deliveries SET state = 'dead', dead_at = now(), reason = 'gave up' WHERE device_id = (SELECT max(id) FROM devices WHERE app_id = \(app.app.id))",
                "UPDATE deliveries SET delivered_at = now()",
                "UPDATE deliveries SET delivered_at = now() + interval '1 second'",
                // Not subscribed to invalidated.
                "UPDATE devices SET invalidated_at = now(), invalidation_reason = 'Unregistered'",
            ]
            for step in steps { try await service.postgres.query(step, logger: TestDatabase.logger) }
            let first = try #require(try await service.integer("SELECT min(id) FROM devices WHERE app_id = \(app.app.id)"))
            let second = first + 1
            var recorded: [String] = []
            let rows = try await service.postgres.query(
                "SELECT type, (payload->>'device_id')::int8, coalesce(payload->>'reason', '-') FROM webhook_events ORDER BY id",
                logger: TestDatabase.logger
            )
            for try await (type, device, reason) in rows.decode((String, Int64, String).self) { recorded.append("\(type) \(device) \(reason)") }
            // Within one statement, events follow delivery ids, which need not follow device ids.
            #expect(
                recorded.sorted()
                    == [
                        "sent \(first) -", "sent \(second) -", "dead \(second) gave up", "delivered \(first) -", "delivered \(second) -",
                    ].sorted())
        }
    }
}
