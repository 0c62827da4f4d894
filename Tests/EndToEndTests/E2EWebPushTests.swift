import Crypto
import Foundation
import HummingbirdTesting
import NotifiableApp
import NotifiableCore
import NotifiableDelivery
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

/// Web Push end to end: browsers register their subscriptions, the worker encrypts and signs each
/// message and POSTs it to the fake push service, and what arrives is opened by the reference
/// implementations (http_ece, py_vapid) with the subscription's private key, not only by our fake.
@Suite(.serialized) struct E2EWebPushTests {
    static func withService<T: Sendable>(
        _ gateway: SandboxWebPushGateway, mode: TestingSetup = .router, webOrigins: Set<String> = [],
        _ body: @Sendable (any TestClientProtocol, TestService) async throws -> T
    ) async throws -> T {
        try await withTestService(
            mode, workers: true,
            configure: { configuration in
                configuration.webPushHosts = WebPushHosts(patterns: [gateway.host])
                configuration.webPushTrustedCAPEM = gateway.certificatePEM
                configuration.webOrigins = webOrigins
            }, body)
    }

    static func withGateway<T: Sendable>(
        host: String = "127.0.0.1", _ body: @Sendable (SandboxWebPushGateway) async throws -> T
    ) async throws -> T {
        let gateway = try await SandboxWebPushGateway.start(host: host)
        do {
            let result = try await body(gateway)
            try await gateway.stop()
            return result
        } catch {
            try? await gateway.stop()
            throw error
        }
    }

    /// Gives the app a VAPID key through the admin API; answers its public key.
    static func enableWebPush(_ client: some TestClientProtocol, _ service: TestService, appID: Int64) async throws -> String {
        let response = try await client.admin(.put, "/admin/apps/\(appID)/webpush", body: #"{"subject": "mailto:ops@example.com"}"#, service: service)
        #expect(response.status == .ok, "\(String(buffer: response.body))")
        return try #require(response.json["public_key"]?.stringValue)
    }

    static func subscriptionBody(_ endpoint: String, _ keys: WebPushKeys, alias: String = "dana") -> String {
        #"{"device_token": {"provider": "webpush", "token": "\#(endpoint)", "keys": {"p256dh": "\#(keys.p256dh)", "auth": "\#(keys.auth)"}, "user_alias": "\#(alias)", "language": "en"}}"#
    }

    @Test func aBrowsersMessageOpensWithTheReferenceImplementationsAndItsSignatureVerifies() async throws {
        try await Self.withGateway { gateway in
            try await Self.withService(gateway) { client, service in
                let app = try await service.createApp()
                let publicKey = try await Self.enableWebPush(client, service, appID: app.app.id)
                // The browser reads the key it subscribes with through the device API.
                let served = try await client.signed(.get, "/api/v1/web_push/vapid_public_key", as: app.deviceCredential)
                #expect(served.json["public_key"]?.stringValue == publicKey)

                let browserKey = P256.KeyAgreement.PrivateKey()
                let auth = Data((0..<16).map { UInt8($0 * 7 + 3) })
                let subscription = gateway.addSubscription(privateKey: browserKey, authSecret: auth, applicationServerKey: publicKey)
                let device = try await Pipeline.register(client, app.deviceCredential, body: Self.subscriptionBody(subscription.endpoint, subscription.keys))
                let id = try await Pipeline.send(
                    client, app.serverCredential,
                    #"{"title": "Gate B12", "message": "Boarding now — ünïcode", "collapse_id": "flight/BA 117 boarding", "priority": "high", "parameters": {"flight": "BA117"}, "device_ids": [\#(device)]}"#
                )
                #expect(try await Pipeline.settled(service, id))
                let deliveries = try await service.describeDeliveries(of: id)
                let message = try #require(gateway.acceptedMessages.first, "\(deliveries)")
                #expect(message.headers["urgency"] == "normal", "an ordinary message, RFC 8030 §5.3")
                #expect(message.headers["content-encoding"] == "aes128gcm")
                #expect(message.headers["topic"] == WebPushMessage.topic(for: "flight/BA 117 boarding"))
                #expect(Int(message.headers["ttl"] ?? "") ?? 0 > 0)

                // http_ece decrypts with the browser's private key; the VAPID token verifies with py_vapid.
                let opened = try Self.openWithReferenceImplementations(
                    body: message.body, browserKey: browserKey, auth: auth, authorization: message.headers["authorization"] ?? "")
                let plaintext = try #require(opened["plaintext"]?.stringValue)
                let document = try JSONValue.decode(Array(plaintext.utf8))
                #expect(document["n_id"]?.stringValue == String(id))
                #expect(document["title"]?.stringValue == "Gate B12")
                #expect(document["message"]?.stringValue == "Boarding now — ünïcode")
                #expect(document["parameters"]?["flight"]?.stringValue == "BA117")
                #expect(opened["signature_verified"] == .bool(true))
                #expect(opened["k"]?.stringValue == publicKey)
                #expect(opened["claims"]?["aud"]?.stringValue == gateway.baseURL)
                #expect(opened["claims"]?["sub"]?.stringValue == "mailto:ops@example.com")
                let exp = try #require(opened["claims"]?["exp"]?.intValue)
                let now = Int64(Date().timeIntervalSince1970)
                #expect(exp > now && exp <= now + 24 * 3600, "RFC 8292 §2: exp within 24 hours")
                #expect(opened["header"]?["alg"]?.stringValue == "ES256")
                let counters = try await Pipeline.counters(client, app.serverCredential, id)
                #expect(counters["counters"]?["sent"]?.intValue == 1, "\(counters)")
                // The count the refusal test relies on counts a push service actually reached.
                #expect(gateway.connectionsAccepted >= 1)
            }
        }
    }

    /// Many browsers at once share one connection's streams: each gets its message once, and every
    /// delivery is recorded sent.
    @Test func aBroadcastToManyBrowsersSendsEachItsMessageOnce() async throws {
        try await Self.withGateway { gateway in
            try await Self.withService(gateway) { client, service in
                let app = try await service.createApp()
                let publicKey = try await Self.enableWebPush(client, service, appID: app.app.id)
                let keys = gateway.makeSubscription(applicationServerKey: publicKey).keys
                try await service.sql(
                    """
                    INSERT INTO devices (app_id, provider, token, push_keys)
                    SELECT \(app.app.id), 'webpush', \(gateway.baseURL) || '/push/many-' || n,
                           jsonb_build_object('p256dh', \(keys.p256dh)::text, 'auth', \(keys.auth)::text)
                    FROM generate_series(1, 300) AS n
                    """)
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "to all", "all": true}"#)
                #expect(try await Pipeline.settled(service, id))
                let counters = try await Pipeline.counters(client, app.serverCredential, id)
                let states = try await service.describeDeliveries(of: id)
                #expect(counters["counters"]?["sent"]?.intValue == 300, "\(counters) \(states.prefix(600))")
                #expect(gateway.acceptedCount == 300)
                #expect(Set(gateway.acceptedMessages.map(\.subscription)).count == 300)
            }
        }
    }

    /// The browser client (`clients/web/notifiable-web.js`), run by Node in a context with only what a
    /// service worker has, against the live server across origins: it reads the key, registers the
    /// subscription signing with X-Date, moves a device to a renewed subscription and reports.
    @Test func theBrowserClientRegistersAndReportsAgainstTheLiveServer() async throws {
        let origin = "https://app.example.com"
        try await Self.withGateway { gateway in
            try await Self.withService(gateway, mode: .live, webOrigins: [origin]) { client, service in
                let app = try await service.createApp()
                let publicKey = try await Self.enableWebPush(client, service, appID: app.app.id)
                let subscription = gateway.makeSubscription(applicationServerKey: publicKey)
                let base = "http://127.0.0.1:\(try #require(client.port))"
                func check(nID: Int64?) async throws -> (status: Int32, output: String) {
                    var environment = ProcessInfo.processInfo.environment
                    environment["BASE_URL"] = base
                    environment["ACCESS_ID"] = app.deviceCredential.accessID
                    environment["SECRET_KEY"] = app.deviceCredential.secretKey
                    environment["ENDPOINT"] = subscription.endpoint
                    environment["P256DH"] = subscription.keys.p256dh
                    environment["AUTH"] = subscription.keys.auth
                    environment["EXPECT_PUBLIC_KEY"] = publicKey
                    environment["WEB_ORIGIN"] = origin
                    if let nID { environment["N_ID"] = String(nID) }
                    return try await runProgram(URL(fileURLWithPath: "/usr/bin/node"), [Self.webClientCheck], environment: environment)
                }
                let first = try await check(nID: nil)
                #expect(first.status == 0, "\(first.output)")
                let device = try #require(try await service.integer("SELECT id FROM devices WHERE user_alias = 'web-alice'"))
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "hi", "user_aliases": ["web-alice"]}"#)
                #expect(try await Pipeline.settled(service, id))
                let reported = try await check(nID: id)
                #expect(reported.status == 0, "\(reported.output)")
                #expect(try await service.integer("SELECT id FROM devices WHERE user_alias = 'web-alice'") == device)
                let counters = try await Pipeline.counters(client, app.serverCredential, id)
                #expect(counters["counters"]?["delivered"]?.intValue == 1, "\(counters)")
                #expect(counters["counters"]?["opened"]?.intValue == 1, "\(counters)")
            }
        }
    }

    static let webClientCheck = TestDatabase.migrationsDirectory.deletingLastPathComponent()
        .appendingPathComponent("scripts/lib/web_client_check.mjs").path

    /// A browser shows every push: a background update is not sent to one, and says why.
    @Test func aBackgroundUpdateIsNotSentToABrowser() async throws {
        try await Self.withGateway { gateway in
            try await Self.withService(gateway) { client, service in
                let app = try await service.createApp()
                let publicKey = try await Self.enableWebPush(client, service, appID: app.app.id)
                let subscription = gateway.makeSubscription(applicationServerKey: publicKey)
                let device = try await Pipeline.register(client, app.deviceCredential, body: Self.subscriptionBody(subscription.endpoint, subscription.keys))
                let id = try await Pipeline.send(client, app.serverCredential, #"{"content_available": true, "device_ids": [\#(device)]}"#)
                #expect(try await Pipeline.settled(service, id))
                #expect(
                    try await service.integer(
                        "SELECT count(*) FROM deliveries WHERE notification_id = \(id) AND state = 'failed' AND reason LIKE 'not_shown_in_browsers%'") == 1)
                #expect(gateway.requestCount == 0)
            }
        }
    }

    @Test func anEndpointOffTheAllowedPushServicesIsRefusedAndNeverContacted() async throws {
        try await Self.withGateway { gateway in
            // A second push service on another loopback name: not on the list, so never to be reached.
            try await Self.withGateway(host: "::1") { elsewhere in
                try await Self.withService(gateway) { client, service in
                    let app = try await service.createApp()
                    let keys = elsewhere.makeSubscription()
                    for endpoint in [keys.endpoint, "https://evil.example.com/push/1", "http://\(gateway.host):\(gateway.port)/push/1"] {
                        let response = try await client.signed(
                            .post, "/api/v1/device_tokens", body: Self.subscriptionBody(endpoint, keys.keys), as: app.deviceCredential)
                        #expect(response.status == .unprocessableContent, "\(endpoint): \(String(buffer: response.body))")
                        #expect(response.json["error"]?["field"]?.stringValue == "device_token.token")
                    }
                    let refused = try await client.signed(
                        .post, "/api/v1/device_tokens", body: Self.subscriptionBody(keys.endpoint, keys.keys), as: app.deviceCredential)
                    #expect(refused.json["error"]?["code"]?.stringValue == "push_service_not_allowed")
                    #expect(try await service.integer("SELECT count(*) FROM devices") == 0)
                }
                #expect(elsewhere.connectionsAccepted == 0, "no connection was ever opened to it")
                #expect(elsewhere.requestCount == 0)
            }
        }
    }

    /// A device whose endpoint is off the list (the list changed since it registered, or a row
    /// written by hand) is not sent to: checked again before every request.
    @Test func anEndpointOffTheListIsCheckedAgainBeforeSending() async throws {
        try await Self.withGateway { gateway in
            try await Self.withGateway(host: "::1") { elsewhere in
                try await Self.withService(gateway) { client, service in
                    let app = try await service.createApp()
                    _ = try await Self.enableWebPush(client, service, appID: app.app.id)
                    let subscription = elsewhere.makeSubscription()
                    try await service.sql(
                        """
                        INSERT INTO devices (app_id, provider, token, push_keys)
                        VALUES (\(app.app.id), 'webpush', \(subscription.endpoint),
                                jsonb_build_object('p256dh', \(subscription.keys.p256dh)::text, 'auth', \(subscription.keys.auth)::text))
                        """)
                    let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "all": true}"#)
                    #expect(try await Pipeline.settled(service, id))
                    #expect(
                        try await service.integer(
                            "SELECT count(*) FROM deliveries WHERE notification_id = \(id) AND state = 'failed' AND reason LIKE 'push_service_not_allowed%'")
                            == 1)
                }
                #expect(elsewhere.connectionsAccepted == 0, "no connection was ever opened to it")
            }
        }
    }

    @Test(arguments: [
        (#"{"p256dh": "BAAA", "auth": "AAAAAAAAAAAAAAAAAAAAAA"}"#, "device_token.keys.p256dh"),
        (#"{"p256dh": "KEY", "auth": "c2hvcnQ"}"#, "device_token.keys.auth"),
        (#""not an object""#, "device_token.keys"),
    ])
    func malformedKeysAreRefusedNamingTheField(keys: String, field: String) async throws {
        try await Self.withGateway { gateway in
            try await Self.withService(gateway) { client, service in
                let app = try await service.createApp()
                let valid = gateway.makeSubscription()
                let body =
                    #"{"device_token": {"provider": "webpush", "token": "\#(valid.endpoint)", "keys": \#(keys.replacingOccurrences(of: "KEY", with: valid.keys.p256dh))}}"#
                let response = try await client.signed(.post, "/api/v1/device_tokens", body: body, as: app.deviceCredential)
                #expect(response.status == .unprocessableContent, "\(String(buffer: response.body))")
                #expect(response.json["error"]?["field"]?.stringValue == field)
                let missing = try await client.signed(
                    .post, "/api/v1/device_tokens", body: #"{"provider": "webpush", "token": "\#(valid.endpoint)"}"#, as: app.deviceCredential)
                #expect(missing.status == .unprocessableContent)
                #expect(missing.json["error"]?["field"]?.stringValue == "keys")
            }
        }
    }

    @Test func aGoneSubscriptionInvalidatesItsDeviceAndARetryWaitsForRetryAfter() async throws {
        try await Self.withGateway { gateway in
            try await Self.withService(gateway) { client, service in
                let app = try await service.createApp()
                let publicKey = try await Self.enableWebPush(client, service, appID: app.app.id)
                let gone = gateway.makeSubscription(applicationServerKey: publicKey)
                let busy = gateway.makeSubscription(applicationServerKey: publicKey)
                gateway.script(endpoint: gone.endpoint, [.gone])
                gateway.script(endpoint: busy.endpoint, [.tooManyRequests(retryAfterSeconds: 2)])
                let goneDevice = try await Pipeline.register(client, app.deviceCredential, body: Self.subscriptionBody(gone.endpoint, gone.keys))
                let busyDevice = try await Pipeline.register(
                    client, app.deviceCredential, body: Self.subscriptionBody(busy.endpoint, busy.keys, alias: "eve"))
                let started = Date()
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "device_ids": [\#(goneDevice), \#(busyDevice)]}"#)
                #expect(try await Pipeline.settled(service, id))
                #expect(
                    try await service.integer("SELECT count(*) FROM devices WHERE id = \(goneDevice) AND invalidated_at IS NOT NULL") == 1)
                #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE device_id = \(busyDevice) AND state = 'sent'") == 1)
                let sentAt = try #require(
                    try await service.integer(
                        "SELECT (extract(epoch FROM sent_at) * 1000)::int8 FROM deliveries WHERE device_id = \(busyDevice)"))
                #expect(Double(sentAt) / 1000 - started.timeIntervalSince1970 >= 2, "the retry came before Retry-After")
                #expect(gateway.acceptedMessages.map(\.subscription) == [String(busy.endpoint.split(separator: "/").last!)])
            }
        }
    }

    /// Browsers of one push service all refusing the key, none taking it: the key is wrong, the app's
    /// Web Push settings are marked misconfigured and its sends stop; no browser is invalidated.
    @Test func aKeyThePushServiceRefusesMarksTheAppsSettingsAndStopsItsSends() async throws {
        try await Self.withGateway { gateway in
            try await Self.withService(gateway) { client, service in
                let app = try await service.createApp()
                _ = try await Self.enableWebPush(client, service, appID: app.app.id)
                // Subscribed with another key (the app's key was replaced by hand before any push went out).
                let other = WebPushVAPID.newKeyPair().publicKey
                var devices: [Int64] = []
                for alias in ["ann", "bob", "cyd", "dee"] {
                    let subscription = gateway.makeSubscription(applicationServerKey: other)
                    devices.append(
                        try await Pipeline.register(
                            client, app.deviceCredential, body: Self.subscriptionBody(subscription.endpoint, subscription.keys, alias: alias)))
                }
                _ = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "device_ids": \#(devices)}"#)
                #expect(
                    try await service.eventually {
                        try await client.admin(.get, "/admin/apps/\(app.app.id)/webpush", service: service).json["misconfiguration"]?.stringValue?
                            .contains("vapid_refused") == true
                    })
                #expect(try await service.integer("SELECT count(*) FROM devices WHERE invalidated_at IS NOT NULL") == 0)
                #expect(gateway.acceptedMessages.isEmpty)
            }
        }
    }

    /// One browser subscribed with another key (a key rotated away, or registered by whoever holds
    /// the web app's device credentials) fails alone: the app goes on sending to the others.
    @Test func oneStaleSubscriptionFailsAloneAndTheAppGoesOnSending() async throws {
        try await Self.withGateway { gateway in
            try await Self.withService(gateway) { client, service in
                let app = try await service.createApp()
                let publicKey = try await Self.enableWebPush(client, service, appID: app.app.id)
                let stale = gateway.makeSubscription(applicationServerKey: WebPushVAPID.newKeyPair().publicKey)
                let staleDevice = try await Pipeline.register(
                    client, app.deviceCredential, body: Self.subscriptionBody(stale.endpoint, stale.keys, alias: "stale"))
                // First alone, before any message of the key was taken: it fails, the app stays configured.
                let first = try await Pipeline.send(client, app.serverCredential, #"{"message": "x", "device_ids": [\#(staleDevice)]}"#)
                #expect(try await Pipeline.settled(service, first))
                var good: [Int64] = []
                for alias in ["fay", "gus"] {
                    let subscription = gateway.makeSubscription(applicationServerKey: publicKey)
                    good.append(
                        try await Pipeline.register(
                            client, app.deviceCredential, body: Self.subscriptionBody(subscription.endpoint, subscription.keys, alias: alias)))
                }
                let second = try await Pipeline.send(client, app.serverCredential, #"{"message": "y", "device_ids": \#(good)}"#)
                #expect(try await Pipeline.settled(service, second))
                // Then again, once the push service has taken the key from the others: the stale one is invalidated.
                let third = try await Pipeline.send(client, app.serverCredential, #"{"message": "z", "device_ids": [\#(staleDevice)]}"#)
                #expect(try await Pipeline.settled(service, third))
                let settings = try await client.admin(.get, "/admin/apps/\(app.app.id)/webpush", service: service)
                #expect(settings.json["misconfiguration"]?.stringValue == nil, "\(String(buffer: settings.body))")
                #expect(gateway.acceptedCount == 2)
                #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(first) AND state = 'failed'") == 1)
                #expect(
                    try await service.integer(
                        "SELECT count(*) FROM devices WHERE id = \(staleDevice) AND invalidated_at IS NOT NULL AND invalidation_reason LIKE 'vapid_mismatch%'")
                        == 1)
            }
        }
    }

    /// Runs http_ece and py_vapid (PyPI) on what the fake push service received.
    static func openWithReferenceImplementations(
        body: [UInt8], browserKey: P256.KeyAgreement.PrivateKey, auth: Data, authorization: String
    ) throws -> JSONValue {
        let python = try #require(
            ProcessInfo.processInfo.environment["NOTIFIABLE_WEBPUSH_PYTHON"], "scripts/test installs http_ece and py_vapid and sets NOTIFIABLE_WEBPUSH_PYTHON")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("webpush-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let bodyFile = folder.appendingPathComponent("body")
        try Data(body).write(to: bodyFile)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [
            "-c", Self.openScript, bodyFile.path, Base64URL.encode(browserKey.rawRepresentation), Base64URL.encode(auth), authorization,
        ]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "\(complaint)")
        return try JSONValue.decode(printed)
    }

    static let openScript = """
        import base64, json, sys
        import http_ece, py_vapid
        from cryptography.hazmat.primitives.asymmetric import ec

        def b64(text):
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

        body = open(sys.argv[1], "rb").read()
        key = ec.derive_private_key(int.from_bytes(b64(sys.argv[2]), "big"), ec.SECP256R1())
        plaintext = http_ece.decrypt(body, private_key=key, auth_secret=b64(sys.argv[3]), version="aes128gcm")
        header = sys.argv[4]
        assert header.startswith("vapid "), header
        parameters = dict(part.strip().split("=", 1) for part in header[len("vapid "):].split(","))
        token, k = parameters["t"], parameters["k"]
        verified = py_vapid.Vapid01.verify(k, "vapid " + token)
        head, claims, _ = token.split(".")
        print(json.dumps({"plaintext": plaintext.decode("utf-8"), "signature_verified": verified, "k": k,
                          "claims": json.loads(b64(claims)), "header": json.loads(b64(head))}))
        """
}
