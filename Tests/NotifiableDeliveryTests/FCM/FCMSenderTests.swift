import AsyncHTTPClient
import Foundation
import Logging
import NotifiableCore
import Synchronization
import Testing

@testable import NotifiableDelivery
@testable import NotifiableStore

/// ``FCMSender`` over a scripted transport standing in for Google's token endpoint and FCM.
@Suite struct FCMSenderTests {
    static let sendURL = "https://fcm.example.test/v1/projects/notifiable-test/messages:send"

    /// The token endpoint issues `token-N`; `messages:send` answers with `answer`.
    final class Google: Sendable {
        let exchanges = Counter()
        let settingsReads = Counter()
        let settings: Mutex<FCMSettings?>
        let transport: ScriptedFCMTransport

        init(
            settings: FCMSettings? = FCMTestAccount.settings(),
            answer: @escaping @Sendable (FCMRecordedRequest) async throws -> GatewayResponse = { _ in
                .json(200, #"{"name":"projects/notifiable-test/messages/1"}"#)
            }
        ) {
            let exchanges = self.exchanges
            self.settings = Mutex(settings)
            self.transport = ScriptedFCMTransport { request in
                if request.url.hasSuffix("/token") {
                    return .json(200, #"{"access_token":"token-\#(exchanges.next())","expires_in":3600}"#)
                }
                return try await answer(request)
            }
        }

        func sender(maxAge: Duration = .seconds(30)) -> FCMSender {
            FCMSender(
                settings: { _ in
                    self.settingsReads.next()
                    return self.settings.withLock { $0 }
                },
                logger: Logger(label: "test.fcm"), requestTimeout: .seconds(5), settingsMaxAge: maxAge,
                makeTransport: { _ in self.transport }
            )
        }

        var sends: [FCMRecordedRequest] { transport.requests(to: ":send") }
    }

    @Test func sendsTheMessageWithAnAccessToken() async throws {
        let google = Google()
        let sender = google.sender()
        let outcome = await sender.send(fcmDelivery(id: 5, token: "device-abc"))
        #expect(outcome == .sent(gatewayID: "projects/notifiable-test/messages/1"))

        let request = try #require(google.sends.first)
        #expect(request.url == Self.sendURL)
        #expect(request.header("authorization") == "Bearer token-1")
        #expect(request.header("content-type") == "application/json; charset=utf-8")
        let message = try #require(request.json["message"]?.objectValue)
        #expect(message["token"] == .string("device-abc"))
        #expect(message["data"] == .object(["n_id": .string("105"), "title": .string("Hello"), "message": .string("World")]))
        await sender.shutdown()
        #expect(google.transport.isShutDown)
    }

    @Test func aBurstForAnAppReadsSettingsOnceAndExchangesOnce() async {
        let google = Google()
        let sender = google.sender()
        let outcomes = await withTaskGroup(of: DeliveryOutcome.self) { group in
            for id in 1...200 { group.addTask { await sender.send(fcmDelivery(id: Int64(id))) } }
            return await group.reduce(into: [DeliveryOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.count == 200)
        #expect(outcomes.allSatisfy { $0 == .sent(gatewayID: "projects/notifiable-test/messages/1") })
        #expect(google.settingsReads.count == 1)
        #expect(google.exchanges.count == 1)
        #expect(google.sends.count == 200)
    }

    @Test func anExpiredAccessTokenIsRefreshedOnceAndTheSendRetried() async {
        let expired = Mutex(false)
        let google = Google { request in
            expired.withLock { $0 } && request.header("authorization") == "Bearer token-1"
                ? .fcmError(401, "UNAUTHENTICATED", errorCode: nil, message: "Request had invalid authentication credentials.")
                : .json(200, #"{"name":"projects/notifiable-test/messages/2"}"#)
        }
        let sender = google.sender()
        #expect(await sender.send(fcmDelivery(id: 1)) == .sent(gatewayID: "projects/notifiable-test/messages/2"))
        // FCM stops taking the cached token: a whole burst is refused with it, and one exchange replaces it.
        expired.withLock { $0 = true }
        let outcomes = await withTaskGroup(of: DeliveryOutcome.self) { group in
            for id in 2...101 { group.addTask { await sender.send(fcmDelivery(id: Int64(id))) } }
            return await group.reduce(into: [DeliveryOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.count == 100)
        #expect(outcomes.allSatisfy { $0 == .sent(gatewayID: "projects/notifiable-test/messages/2") })
        #expect(google.exchanges.count == 2)
        #expect(google.sends.filter { $0.header("authorization") == "Bearer token-2" }.count == 100)
    }

    @Test func aFreshTokenRefusedAgainMeansTheAppIsMisconfigured() async {
        let google = Google { _ in .fcmError(401, "UNAUTHENTICATED", errorCode: nil, message: "Invalid credentials") }
        let sender = google.sender()
        let outcome = await sender.send(fcmDelivery())
        #expect(
            outcome
                == .misconfigured(
                    reason: "UNAUTHENTICATED: Invalid credentials: FCM refused a fresh access token; check that the service account may "
                        + "send messages for this project"
                ))
        #expect(google.sends.count == 2)
        #expect(google.exchanges.count == 2)
        // Remembered: the app's next delivery stops at once, without asking FCM or re-reading settings
        // (they are read again after the short wait a refused configuration gets).
        guard case .misconfigured(_, nil) = await sender.send(fcmDelivery(id: 2)) else {
            Issue.record("the next delivery was not held back")
            return
        }
        #expect(google.sends.count == 2)
        #expect(google.settingsReads.count == 1)
    }

    @Test func aRefusalByFCMHoldsTheAppBackThenTheSettingsAreReadAgain() async throws {
        let google = Google { _ in .fcmError(403, "PERMISSION_DENIED", errorCode: nil, message: "denied") }
        let sender = google.sender(maxAge: .seconds(2))
        guard case .misconfigured = await sender.send(fcmDelivery(id: 1)) else {
            Issue.record("a 403 is not a misconfiguration")
            return
        }
        // At once, before the worker's mark can be stored, the next delivery is held back here.
        guard case .misconfigured(_, nil) = await sender.send(fcmDelivery(id: 2)) else {
            Issue.record("the next delivery was not held back")
            return
        }
        #expect(google.settingsReads.count == 1)
        // The worker marks the app; after the short wait the settings are read again, mark and all.
        google.settings.withLock { $0?.misconfigurationReason = "PERMISSION_DENIED: denied" }
        try await Task.sleep(for: .milliseconds(2200))
        #expect(await sender.send(fcmDelivery(id: 3)) == .misconfigured(reason: "PERMISSION_DENIED: denied"))
        #expect(google.settingsReads.count == 2)
        #expect(google.sends.count == 1)
        // The operator saves the settings again: sending resumes with the access token already had.
        google.settings.withLock { $0?.misconfigurationReason = nil }
        try await Task.sleep(for: .milliseconds(2200))
        _ = await sender.send(fcmDelivery(id: 4))
        #expect(google.sends.count == 2)
        #expect(google.exchanges.count == 1)
    }

    @Test func withoutSettingsNothingIsSent() async {
        let google = Google(settings: nil)
        let outcome = await google.sender().send(fcmDelivery())
        guard case .misconfigured(let reason, _) = outcome else {
            Issue.record("got \(outcome)")
            return
        }
        #expect(reason.hasPrefix("fcm_not_configured: set the app's FCM service account"))
        #expect(google.transport.requests.isEmpty)
    }

    @Test func unreadableSettingsAreRetried() async {
        struct DatabaseDown: Error {}
        let sender = FCMSender(
            settings: { _ in throw DatabaseDown() }, logger: Logger(label: "test.fcm"), requestTimeout: .seconds(5),
            settingsMaxAge: .seconds(30), makeTransport: { _ in ScriptedFCMTransport { _ in .json(500, "") } }
        )
        guard case .retry(let reason, .seconds(5)) = await sender.send(fcmDelivery()) else {
            Issue.record("not retried")
            return
        }
        #expect(reason.hasPrefix("FCM settings could not be read"))
    }

    @Test func aMarkedAppIsNotSentTo() async {
        var settings = FCMTestAccount.settings()
        settings.misconfigurationReason = "PERMISSION_DENIED: denied"
        let google = Google(settings: settings)
        #expect(await google.sender().send(fcmDelivery()) == .misconfigured(reason: "PERMISSION_DENIED: denied"))
        #expect(google.transport.requests.isEmpty)
    }

    @Test func anUnusableServiceAccountIsAMisconfiguration() async {
        var settings = FCMTestAccount.settings()
        settings.serviceAccountJSON = #"{"project_id": "notifiable-test", "client_email": "a@b.c"}"#
        let google = Google(settings: settings)
        #expect(
            await google.sender().send(fcmDelivery())
                == .misconfigured(
                    reason: "fcm_settings_unusable: service account: the service account has no private_key: download a new key for "
                        + "the service account in the Firebase console"
                ))
        #expect(google.transport.requests.isEmpty)
    }

    @Test func aRefusedServiceAccountIsAMisconfigurationWithoutSending() async {
        let transport = ScriptedFCMTransport { request in
            request.url.hasSuffix("/token")
                ? .json(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
                : .json(200, "{}")
        }
        let sender = FCMSender(
            settings: { _ in FCMTestAccount.settings() }, logger: Logger(label: "test.fcm"), requestTimeout: .seconds(5),
            settingsMaxAge: .seconds(30), makeTransport: { _ in transport }
        )
        for id in 1...3 {
            guard case .misconfigured(let reason, _) = await sender.send(fcmDelivery(id: Int64(id))) else {
                Issue.record("not misconfigured")
                return
            }
            #expect(reason.hasPrefix("access token refused: https://oauth2.example.test/token answered 400 invalid_grant"))
        }
        // The refusal is remembered: one exchange for the three.
        #expect(transport.requests.count == 1)
        #expect(transport.requests(to: ":send").isEmpty)
    }

    @Test func anUnreachableTokenEndpointIsRetried() async {
        let transport = ScriptedFCMTransport { _ in throw HTTPClientError.connectTimeout }
        let sender = FCMSender(
            settings: { _ in FCMTestAccount.settings() }, logger: Logger(label: "test.fcm"), requestTimeout: .seconds(5),
            settingsMaxAge: .seconds(30), makeTransport: { _ in transport }
        )
        #expect(await sender.send(fcmDelivery()) == .retry(reason: "access token unavailable: connect timeout", retryAfter: nil))
    }

    @Test func aSenderIDMismatchIsHeldBackUntilFCMAcceptedAMessage() async {
        let google = Google { request in
            request.json["message"]?.objectValue?["token"] == .string("foreign")
                ? .fcmError(403, "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH", message: "SenderId mismatch")
                : .json(200, #"{"name":"n"}"#)
        }
        let sender = google.sender()
        guard case .retry(let reason, nil) = await sender.send(fcmDelivery(token: "foreign")) else {
            Issue.record("a mismatch before any accepted message was not held back")
            return
        }
        #expect(reason.hasPrefix("SENDER_ID_MISMATCH: SenderId mismatch before FCM accepted any message for this app"))
        #expect(await sender.send(fcmDelivery(id: 2, token: "mine")) == .sent(gatewayID: "n"))
        #expect(await sender.send(fcmDelivery(id: 3, token: "foreign")) == .tokenDead(reason: "SENDER_ID_MISMATCH: SenderId mismatch", at: nil))
    }

    @Test func deadTokensAndBadMessagesComeBackAsTheyAre() async {
        let google = Google { request in
            switch request.json["message"]?.objectValue?["token"] {
            case .string("gone"): .fcmError(404, "NOT_FOUND", errorCode: "UNREGISTERED", message: "Requested entity was not found.")
            case .string("busy"): .fcmError(429, "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED", message: "Quota", retryAfter: "20")
            default: .json(200, #"{"name":"n"}"#)
            }
        }
        let sender = google.sender()
        #expect(
            await sender.send(fcmDelivery(token: "gone"))
                == .tokenDead(reason: "UNREGISTERED: Requested entity was not found.", at: nil))
        #expect(await sender.send(fcmDelivery(token: "busy")) == .retry(reason: "QUOTA_EXCEEDED: Quota", retryAfter: .seconds(20)))

        let reserved = NotificationContent(text: LocalizedText(title: "t"), parameters: ["google.x": .string("v")])
        guard case .failed(let reason) = await sender.send(fcmDelivery(token: "ok", content: reserved)) else {
            Issue.record("a reserved key was not refused")
            return
        }
        #expect(reason.hasPrefix("reserved_data_key"))
        #expect(google.sends.count == 2)
    }

    /// Tried again, and counted as of unknown outcome: FCM may have taken the message.
    @Test func aLostConnectionIsRetried() async {
        let google = Google { _ in throw HTTPClientError.remoteConnectionClosed }
        #expect(await google.sender().send(fcmDelivery()) == .outcomeUnknown(reason: "connection closed by FCM"))
    }

    @Test func settingsAreReadAgainAndTokensKeptWhileTheAccountIsUnchanged() async throws {
        let google = Google()
        let sender = google.sender(maxAge: .milliseconds(50))
        #expect(await sender.send(fcmDelivery(id: 1)) == .sent(gatewayID: "projects/notifiable-test/messages/1"))
        try await Task.sleep(for: .milliseconds(100))
        #expect(await sender.send(fcmDelivery(id: 2)) == .sent(gatewayID: "projects/notifiable-test/messages/1"))
        #expect(google.settingsReads.count == 2)
        #expect(google.exchanges.count == 1)

        // Another key for the account: a new token, and messages go to the project the settings name.
        google.settings.withLock {
            $0?.serviceAccountJSON = FCMTestAccount.json(keyID: "another-key")
            $0?.projectID = "other-project"
        }
        try await Task.sleep(for: .milliseconds(100))
        _ = await sender.send(fcmDelivery(id: 3))
        #expect(google.exchanges.count == 2)
        #expect(google.sends.last?.url == "https://fcm.example.test/v1/projects/other-project/messages:send")
        #expect(google.sends.last?.header("authorization") == "Bearer token-2")
    }

    @Test func theSendURLIsBuiltFromTheEndpointAndProject() {
        #expect(
            FCMConnection.sendURL(baseURL: "https://fcm.googleapis.com", projectID: "my-app")
                == "https://fcm.googleapis.com/v1/projects/my-app/messages:send")
        #expect(
            FCMConnection.sendURL(baseURL: "https://127.0.0.1:4443/", projectID: "example.com:legacy")
                == "https://127.0.0.1:4443/v1/projects/example.com:legacy/messages:send")
        #expect(
            FCMConnection.sendURL(baseURL: "https://h", projectID: "a/b c")
                == "https://h/v1/projects/a%2Fb%20c/messages:send")
    }
}
