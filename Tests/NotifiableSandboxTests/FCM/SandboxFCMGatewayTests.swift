import AsyncHTTPClient
import Foundation
import NotifiableSandbox
import Testing
import _CryptoExtras

@Suite("Fake FCM gateway: tokens and sends", .timeLimit(.minutes(1)))
struct SandboxFCMGatewayTests {
    @Test("A token exchange and a send are answered over HTTP/2, and the message is recorded with its fields")
    func exchangeAndSend() async throws {
        try await withFCMGateway { harness async throws in
            let exchange = try await harness.exchange(assertion: try harness.account.assertion())
            #expect(exchange.status == 200)
            #expect(exchange.isHTTP2)
            #expect(exchange.contentType?.hasPrefix("application/json") == true)
            #expect(exchange.expiresIn == 3599)
            #expect(exchange.tokenType == "Bearer")
            let accessToken = try #require(exchange.accessToken)

            let token = registrationToken(1)
            let body = messageBody(to: token)
            let answer = try await harness.send(body, bearer: accessToken)
            #expect(answer.status == 200)
            #expect(answer.isHTTP2)
            let name = try #require(answer.name)
            #expect(name.hasPrefix("projects/demo-project/messages/"))
            #expect(name.count > "projects/demo-project/messages/".count)

            let message = try #require(harness.gateway.acceptedMessages.first)
            #expect(harness.gateway.acceptedMessages.count == 1)
            #expect(message.projectID == "demo-project")
            #expect(message.name == name)
            #expect(message.token == token)
            #expect(message.bodyString == body)
            #expect(message.data == ["order": "42", "kind": "shipped"])
            #expect(message.notificationTitle == "Hello")
            #expect(message.notificationBody == "World")
            #expect(message.notificationImage == nil)
            #expect(message.android?["priority"] == .string("HIGH"))
            #expect(message.androidPriority == "HIGH")
            #expect(message.androidTTL == "3600s")
            #expect(message.androidCollapseKey == "orders")
            #expect(message.headers["authorization"] == "Bearer \(accessToken)")
            #expect(message.headers["content-type"] == "application/json; UTF-8")
            #expect(message.headers[":path"] == nil)
            #expect(abs(message.receivedAt.timeIntervalSinceNow) < 30)
            #expect(harness.gateway.messages(to: token).count == 1)
            #expect(harness.gateway.messages(to: registrationToken(2)).isEmpty)
            #expect(harness.gateway.acceptedCount == 1)
            #expect(harness.gateway.sendRequestCount == 1)
            #expect(harness.gateway.tokenRequestCount == 1)
            #expect(harness.gateway.tokensIssued == 1)
        }
    }

    @Test("The service account key file is shaped as Google issues it and points at the gateway")
    func serviceAccountFile() async throws {
        try await withFCMGateway { harness async throws in
            let json = try harness.gateway.makeServiceAccount(projectID: "other-project", clientEmail: "sender@other-project.iam.gserviceaccount.com")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String])
            #expect(object["type"] == "service_account")
            #expect(object["project_id"] == "other-project")
            #expect(object["client_email"] == "sender@other-project.iam.gserviceaccount.com")
            #expect(object["token_uri"] == harness.gateway.tokenURI)
            #expect(harness.gateway.tokenURI == harness.gateway.baseURL + "/token")
            #expect(object["auth_uri"] == "https://accounts.google.com/o/oauth2/auth")
            #expect(object["private_key_id"]?.count == 40)
            #expect(object["client_id"]?.allSatisfy(\.isNumber) == true)
            #expect(object["private_key"]?.hasPrefix("-----BEGIN PRIVATE KEY-----\n") == true)
            #expect(object["private_key"]?.hasSuffix("-----END PRIVATE KEY-----\n") == true)
            #expect(json.contains(#"\n"#))
            let defaultEmail = try ServiceAccountKey(json: try harness.gateway.makeServiceAccount()).clientEmail
            #expect(defaultEmail.hasPrefix("firebase-adminsdk-"))
            #expect(defaultEmail.hasSuffix("@demo-project.iam.gserviceaccount.com"))

            // Its tokens send to its own project only.
            let account = try ServiceAccountKey(json: json)
            let exchange = try await harness.exchange(assertion: try account.assertion())
            let accessToken = try #require(exchange.accessToken)
            let token = registrationToken()
            #expect(try await harness.send(messageBody(to: token), bearer: accessToken, project: "other-project").status == 200)
            #expect(try await harness.send(messageBody(to: token), bearer: accessToken).status == 403)
        }
    }

    @Test("A key trusted directly, or from someone else's key file, gets tokens")
    func trustsKeys() async throws {
        try await withFCMGateway { harness async throws in
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            harness.gateway.trust(clientEmail: "direct@demo-project.iam.gserviceaccount.com", projectID: "demo-project", publicKey: key.publicKey)
            let direct = try await harness.exchange(
                assertion: try harness.account.assertion(issuer: "direct@demo-project.iam.gserviceaccount.com", signingKey: key)
            )
            #expect(direct.status == 200)

            let other = try await SandboxFCMGateway.start()
            let foreignJSON = try other.makeServiceAccount(projectID: "demo-project", clientEmail: "foreign@demo-project.iam.gserviceaccount.com")
            try await other.stop()
            let foreign = try ServiceAccountKey(json: foreignJSON)
            let before = try await harness.exchange(assertion: try foreign.assertion(audience: harness.gateway.tokenURI))
            #expect(before.oauthError == "invalid_grant")
            #expect(try harness.gateway.trust(serviceAccountJSON: foreignJSON) == foreign.clientEmail)
            let after = try await harness.exchange(assertion: try foreign.assertion(audience: harness.gateway.tokenURI))
            #expect(after.status == 200)
            #expect(throws: (any Error).self) { try harness.gateway.trust(serviceAccountJSON: #"{"type":"user"}"#) }
        }
    }

    @Test("A bad assertion or form is refused with Google's OAuth error", arguments: TokenRefusal.all)
    func refusesAssertion(_ refusal: TokenRefusal) async throws {
        try await withFCMGateway { harness async throws in
            let answer = try await harness.exchange(form: try refusal.form(harness.account))
            #expect(answer.status == 400)
            #expect(answer.oauthError == refusal.error)
            #expect(answer.oauthErrorDescription?.isEmpty == false)
            #expect(answer.accessToken == nil)
            #expect(harness.gateway.tokenRequestCount == 1)
            #expect(harness.gateway.tokensIssued == 0)
        }
    }

    @Test("A send without a live access token is answered 401 UNAUTHENTICATED, without an FcmError")
    func refusesMissingOrUnknownBearer() async throws {
        try await withFCMGateway { harness async throws in
            let body = messageBody(to: registrationToken())
            var answers = [try await harness.send(body, bearer: nil), try await harness.send(body, bearer: "ya29.unknown")]
            answers.append(
                try await harness.request(
                    "POST", harness.sendPath(), headers: [("authorization", "Basic dXNlcjpwYXNz")], body: body
                )
            )
            for answer in answers {
                #expect(answer.status == 401)
                #expect(answer.errorCode == 401)
                #expect(answer.errorStatus == "UNAUTHENTICATED")
                #expect(answer.errorMessage?.contains("invalid authentication credentials") == true)
                #expect(answer.fcmErrorCode == nil)
                #expect(answer.wwwAuthenticate?.hasPrefix("Bearer") == true)
            }
            #expect(harness.gateway.acceptedCount == 0)
            #expect(harness.gateway.sendRequestCount == 3)
        }
    }

    @Test("expireAccessTokens() makes issued tokens 401; a new exchange gets one that works")
    func expiresAccessTokens() async throws {
        try await withFCMGateway { harness async throws in
            let body = messageBody(to: registrationToken())
            let old = try await harness.accessToken()
            #expect(try await harness.send(body, bearer: old).status == 200)
            harness.gateway.expireAccessTokens()
            let refused = try await harness.send(body, bearer: old)
            #expect(refused.status == 401)
            #expect(refused.errorStatus == "UNAUTHENTICATED")
            let fresh = try await harness.accessToken()
            #expect(fresh != old)
            #expect(try await harness.send(body, bearer: fresh).status == 200)
            #expect(harness.gateway.tokensIssued == 2)
        }
    }

    @Test("Access tokens live as long as the lifetime set when they were issued")
    func accessTokenLifetime() async throws {
        try await withFCMGateway { harness async throws in
            let body = messageBody(to: registrationToken())
            harness.gateway.setAccessTokenLifetime(seconds: 0)
            let stillborn = try await harness.exchange(assertion: try harness.account.assertion())
            #expect(stillborn.expiresIn == 0)
            let stillbornToken = try #require(stillborn.accessToken)
            #expect(try await harness.send(body, bearer: stillbornToken).status == 401)

            harness.gateway.setAccessTokenLifetime(seconds: 600)
            let exchange = try await harness.exchange(assertion: try harness.account.assertion())
            #expect(exchange.expiresIn == 600)
            let accessToken = try #require(exchange.accessToken)
            #expect(try await harness.send(body, bearer: accessToken).status == 200)
        }
    }

    @Test("A token of one project sending to another is answered 403 PERMISSION_DENIED")
    func refusesOtherProject() async throws {
        try await withFCMGateway { harness async throws in
            let answer = try await harness.send(
                messageBody(to: registrationToken()), bearer: try await harness.accessToken(), project: "someone-else"
            )
            #expect(answer.status == 403)
            #expect(answer.errorStatus == "PERMISSION_DENIED")
            #expect(answer.errorMessage?.contains("someone-else") == true)
            #expect(answer.fcmErrorCode == nil)
            #expect(harness.gateway.acceptedMessages.isEmpty)
        }
    }

    @Test("An invalid send is refused as FCM does, naming the field", arguments: SendRefusal.all)
    func refusesInvalidSend(_ refusal: SendRefusal) async throws {
        try await withFCMGateway { harness async throws in
            harness.gateway.script(token: registrationToken(), [.unregistered])
            let accessToken = try await harness.accessToken()
            let answer = try await harness.request(
                refusal.method, refusal.path ?? harness.sendPath(),
                headers: [("authorization", "Bearer \(accessToken)"), ("content-type", "application/json")],
                body: refusal.body
            )
            #expect(answer.status == refusal.status)
            #expect(answer.errorCode == Int(refusal.status))
            #expect(answer.isHTTP2)
            if let field = refusal.field {
                #expect(answer.errorStatus == "INVALID_ARGUMENT")
                #expect(answer.violatedFields == (field.isEmpty ? [] : [field]), "\(answer.bodyText)")
            }
            if let text = refusal.messageContains {
                #expect(answer.errorMessage?.contains(text) == true, "\(answer.bodyText)")
            }
            #expect(harness.gateway.acceptedMessages.isEmpty)
            // The refused request did not use up the token's script.
            #expect(try await harness.send(messageBody(to: registrationToken()), bearer: accessToken).status == 404)
        }
    }

    @Test("Field names in lowerCamelCase, lower-case priorities and fractional TTLs are taken, as proto3 JSON allows")
    func acceptsProtoJSONSpellings() async throws {
        try await withFCMGateway { harness async throws in
            let android =
                #"{"priority":"normal","ttl":"1.5s","collapseKey":"c","directBootOk":true,"#
                + #""notification":{"channelId":"orders","clickAction":"OPEN"}}"#
            let body = messageBody(to: registrationToken(), android: android)
            #expect(try await harness.send(body, bearer: try await harness.accessToken()).status == 200)
            #expect(harness.gateway.acceptedMessages.first?.androidCollapseKey == "c")
        }
    }

    @Test("validate_only checks the message, answers a placeholder name and records nothing")
    func validateOnly() async throws {
        try await withFCMGateway { harness async throws in
            let body = #"{"validate_only":true,"message":{"token":"\#(registrationToken())","data":{"a":"b"}}}"#
            let answer = try await harness.send(body, bearer: try await harness.accessToken())
            #expect(answer.status == 200)
            #expect(answer.name == "projects/demo-project/messages/fake_message_id")
            #expect(harness.gateway.acceptedMessages.isEmpty)
            #expect(harness.gateway.acceptedCount == 0)
        }
    }

    @Test("The gateway also speaks HTTP/1.1 to a client that asks for it")
    func speaksHTTP1() async throws {
        try await withFCMGateway(httpVersion: .http1Only) { harness async throws in
            let accessToken = try await harness.accessToken()
            for index in 0..<3 {
                let answer = try await harness.send(messageBody(to: registrationToken(index)), bearer: accessToken)
                #expect(answer.status == 200)
                #expect(!answer.isHTTP2)
            }
            #expect(try await harness.send("{}", bearer: accessToken).status == 400)
            #expect(harness.gateway.acceptedCount == 3)
        }
    }

    @Test("After stop, the port refuses connections; stopping twice is harmless")
    func stop() async throws {
        let harness = try await FCMHarness.start()
        let client = try FCMHarness.makeClient(trustingPEM: harness.gateway.certificatePEM)
        // Clients are shut down whatever happens: one dropped unshut traps in debug builds, ending the test run.
        do {
            _ = try await harness.accessToken()
            try await harness.gateway.stop()
            try await harness.gateway.stop()
            let fresh = FCMHarness(gateway: harness.gateway, client: client, account: harness.account)
            await #expect(throws: (any Error).self) {
                _ = try await fresh.request("POST", "/token", body: "", timeoutSeconds: 1)
            }
        } catch {
            Issue.record(error)
        }
        try await client.shutdown()
        try await harness.client.shutdown()
    }
}

/// One way a token request can be wrong, and the OAuth error Google answers.
struct TokenRefusal: Sendable, CustomTestStringConvertible {
    var name: String
    var error: String
    var form: @Sendable (ServiceAccountKey) throws -> String

    var testDescription: String { "\(name) → \(error)" }

    static let grant = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"

    static func assertion(_ name: String, _ make: @escaping @Sendable (ServiceAccountKey) throws -> String) -> TokenRefusal {
        TokenRefusal(name: name, error: "invalid_grant") { account in "\(grant)&assertion=\(try make(account))" }
    }

    static let all: [TokenRefusal] = [
        assertion("signed by another key") { try $0.assertion(signingKey: try _RSA.Signing.PrivateKey(keySize: .bits2048)) },
        assertion("wrong aud") { try $0.assertion(audience: "https://oauth2.googleapis.com/token") },
        assertion("unknown iss") { try $0.assertion(issuer: "stranger@demo-project.iam.gserviceaccount.com") },
        assertion("expired") { try $0.assertion(issuedAt: Date().addingTimeInterval(-7200)) },
        assertion("valid for over an hour") { try $0.assertion(lifetimeSeconds: 7200) },
        assertion("issued in the future") { try $0.assertion(issuedAt: Date().addingTimeInterval(600)) },
        assertion("alg HS256") { try $0.assertion(algorithm: "HS256") },
        assertion("not a JWT") { _ in "not.a.jwt" },
        assertion("tampered claims") { account in
            let parts = try account.assertion().split(separator: ".").map(String.init)
            let claims = try account.assertion(issuer: account.clientEmail, scope: "https://www.googleapis.com/auth/cloud-platform")
                .split(separator: ".")[1]
            return "\(parts[0]).\(claims).\(parts[2])"
        },
        TokenRefusal(name: "no FCM scope", error: "invalid_scope") { account in
            "\(grant)&assertion=\(try account.assertion(scope: "https://www.googleapis.com/auth/userinfo.email"))"
        },
        TokenRefusal(name: "no grant_type", error: "invalid_request") { "assertion=\(try $0.assertion())" },
        TokenRefusal(name: "another grant_type", error: "unsupported_grant_type") { "grant_type=client_credentials&assertion=\(try $0.assertion())" },
        TokenRefusal(name: "no assertion", error: "invalid_request") { _ in grant },
    ]
}

/// One way a send can be wrong, and what FCM answers.
struct SendRefusal: Sendable, CustomTestStringConvertible {
    var name: String
    var status: UInt
    var field: String?
    var messageContains: String?
    var method = "POST"
    var path: String?
    var body: String?

    var testDescription: String { "\(name) → \(status) \(field ?? "")" }

    static let token = registrationToken()

    static func invalid(_ name: String, field: String, _ body: String, messageContains: String? = nil) -> SendRefusal {
        SendRefusal(name: name, status: 400, field: field, messageContains: messageContains, body: body)
    }

    static let all: [SendRefusal] = [
        invalid("data value a number", field: "message.data[0].value", messageBody(to: token, data: #"{"count":12}"#), messageContains: "(TYPE_STRING), 12"),
        invalid("second data value a boolean", field: "message.data[1].value", messageBody(to: token, data: #"{"a":"x","b":true}"#)),
        invalid("data not an object", field: "message.data", messageBody(to: token, data: #"["a"]"#)),
        // 4096 bytes of data and notification, keys and values: the notification's "title" "Hello" "body" "World"
        // are 19, "big" and 4075 more make 4097, one byte over.
        invalid(
            "data over 4096 bytes", field: "message", messageBody(to: token, data: #"{"big":""# + String(repeating: "x", count: 4075) + #""}"#),
            messageContains: "Message is too big"
        ),
        invalid("reserved data key from", field: "message.data", messageBody(to: token, data: #"{"from":"me"}"#), messageContains: "reserved"),
        invalid("reserved data key prefix google", field: "message.data", messageBody(to: token, data: #"{"google.sent_time":"1"}"#)),
        invalid("reserved data key prefix gcm", field: "message.data", messageBody(to: token, data: #"{"gcm_x":"1"}"#)),
        invalid("android data value a number", field: "message.android.data[0].value", messageBody(to: token, android: #"{"data":{"n":1}}"#)),
        invalid("priority URGENT", field: "message.android.priority", messageBody(to: token, android: #"{"priority":"URGENT"}"#)),
        invalid("ttl without s", field: "message.android.ttl", messageBody(to: token, android: #"{"ttl":"3600"}"#)),
        invalid("ttl a number", field: "message.android.ttl", messageBody(to: token, android: #"{"ttl":3600}"#)),
        invalid("collapse_key a number", field: "message.android.collapse_key", messageBody(to: token, android: #"{"collapse_key":7}"#)),
        invalid("unknown android field", field: "message.android", messageBody(to: token, android: #"{"time_to_live":60}"#), messageContains: "Unknown name"),
        invalid(
            "android color not #rrggbb", field: "message.android.notification.color",
            messageBody(to: token, android: ##"{"notification":{"color":"#f60"}}"##), messageContains: "#RRGGBB"
        ),
        invalid(
            "android visibility lower-case", field: "message.android.notification.visibility",
            messageBody(to: token, android: #"{"notification":{"visibility":"private"}}"#)
        ),
        invalid(
            "notification_priority unknown", field: "message.android.notification.notification_priority",
            messageBody(to: token, android: #"{"notification":{"notification_priority":"URGENT"}}"#)
        ),
        invalid(
            "notification_count a string", field: "message.android.notification.notification_count",
            messageBody(to: token, android: #"{"notification":{"notification_count":"2"}}"#)
        ),
        invalid(
            "loc args not strings", field: "message.android.notification.body_loc_args[0]",
            messageBody(to: token, android: #"{"notification":{"body_loc_args":[1]}}"#)
        ),
        invalid(
            "apns headers not strings", field: "message.apns.headers[apns-priority]", #"{"message":{"token":"t","apns":{"headers":{"apns-priority":10}}}}"#),
        invalid("apns aps not an object", field: "message.apns.payload.aps", #"{"message":{"token":"t","apns":{"payload":{"aps":1}}}}"#),
        invalid("unknown apns field", field: "message.apns", #"{"message":{"token":"t","apns":{"priority":"10"}}}"#, messageContains: "Unknown name"),
        invalid(
            "iOS background at priority 10", field: "message.apns.headers",
            #"{"message":{"token":"t","apns":{"headers":{"apns-priority":"10"},"payload":{"aps":{"content-available":1}}}}}"#,
            messageContains: "apns-priority 5"
        ),
        invalid("notification title a number", field: "message.notification.title", #"{"message":{"token":"t","notification":{"title":5}}}"#),
        invalid("unknown notification field", field: "message.notification", #"{"message":{"token":"t","notification":{"sound":"x"}}}"#),
        invalid("unknown message field", field: "message", #"{"message":{"token":"t","priority":"high"}}"#),
        invalid("token a number", field: "message.token", #"{"message":{"token":42}}"#),
        invalid("no token", field: "message", #"{"message":{"data":{"a":"b"}}}"#, messageContains: "Recipient of the message is not set."),
        invalid("empty token", field: "message", #"{"message":{"token":""}}"#),
        invalid("no message", field: "message", #"{"validate_only":false}"#),
        invalid("unknown top-level field", field: "", #"{"message":{"token":"t"},"to":"x"}"#),
        invalid("body not JSON", field: "", "hello", messageContains: "Invalid JSON payload received."),
        invalid("body a JSON array", field: "", "[1]"),
        SendRefusal(
            name: "body over 64 KiB", status: 400, messageContains: "Request payload size exceeds the limit",
            body: messageBody(to: token, data: #"{"big":""# + String(repeating: "x", count: 70_000) + #""}"#)
        ),
        SendRefusal(name: "GET", status: 405, method: "GET"),
        SendRefusal(name: "unknown path", status: 404, path: "/v1/projects/demo-project/messages"),
        SendRefusal(name: "legacy path", status: 404, path: "/fcm/send", body: "{}"),
    ]
}
