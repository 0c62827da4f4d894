import AsyncHTTPClient
import Crypto
import Foundation
import NotifiableSandbox
import Testing

@Suite("Fake APNs gateway", .timeLimit(.minutes(1)))
struct SandboxAPNsGatewayTests {
    @Test("A valid push is answered 200 over HTTP/2 with an apns-id and recorded")
    func acceptsValidPush() async throws {
        try await withGateway { harness async throws in
            let token = deviceToken(1).uppercased()
            var request = try harness.validPush(to: token)
            request.set("apns-priority", "10")
            request.set("apns-expiration", "0")
            request.set("apns-collapse-id", "greeting")
            let answer = try await harness.send(request)

            #expect(answer.status == 200)
            #expect(answer.isHTTP2)
            #expect(answer.body.isEmpty)
            let apnsID = try #require(answer.apnsID)
            #expect(UUID(uuidString: apnsID) != nil)

            let pushes = harness.gateway.acceptedPushes
            #expect(pushes.count == 1)
            let push = try #require(pushes.first)
            #expect(push.token == token.lowercased())
            #expect(push.apnsID == apnsID)
            #expect(push.payloadString == alertPayload)
            #expect(push.headers["apns-topic"] == topic)
            #expect(push.headers["apns-push-type"] == "alert")
            #expect(push.headers["apns-priority"] == "10")
            #expect(push.headers["apns-collapse-id"] == "greeting")
            #expect(push.headers["authorization"]?.hasPrefix("bearer ") == true)
            #expect(push.headers[":path"] == nil)
            #expect(abs(push.receivedAt.timeIntervalSinceNow) < 30)
            #expect(harness.gateway.pushes(to: token).count == 1)
            #expect(harness.gateway.pushes(to: deviceToken(2)).isEmpty)
            #expect(harness.gateway.requestCount == 1)
            #expect(harness.gateway.acceptedCount == 1)
        }
    }

    @Test("The request's apns-id is echoed, and the same provider token serves many pushes")
    func echoesAPNsID() async throws {
        try await withGateway { harness async throws in
            let jwt = try harness.key.token()
            for index in 0..<3 {
                let id = UUID().uuidString
                var request = PushRequest(token: deviceToken(index), jwt: jwt)
                request.set("apns-id", id)
                let answer = try await harness.send(request)
                #expect(answer.status == 200)
                #expect(answer.apnsID == id)
            }
            #expect(harness.gateway.acceptedPushes.map(\.token) == (0..<3).map { deviceToken($0) })
        }
    }

    @Test("An invalid request is refused with APNs's status and reason", arguments: RefusalCase.all)
    func refuses(_ refusal: RefusalCase) async throws {
        try await withGateway { harness async throws in
            refusal.configure(harness.gateway)
            var request = try harness.validPush()
            try refusal.change(&request, harness.key)
            let answer = try await harness.send(request)

            #expect(answer.status == refusal.status)
            #expect(answer.reason == refusal.reason)
            #expect(answer.isHTTP2)
            #expect(answer.contentType == "application/json")
            let apnsID = try #require(answer.apnsID)
            #expect(UUID(uuidString: apnsID) != nil)
            #expect(harness.gateway.acceptedPushes.isEmpty)
            #expect(harness.gateway.requestCount == 1)
        }
    }

    @Test("Checks run in APNs's order: the first failed check answers")
    func checksInOrder() async throws {
        try await withGateway { harness async throws in
            var request = PushRequest(token: "zz", jwt: nil, body: nil)
            request.set("apns-topic", nil)
            #expect(try await harness.send(request).reason == "MissingProviderToken")

            request = PushRequest(token: "zz", jwt: try harness.key.token(), body: nil)
            request.set("apns-topic", nil)
            #expect(try await harness.send(request).reason == "MissingTopic")

            request = PushRequest(token: "zz", jwt: try harness.key.token(), body: nil)
            request.set("apns-priority", "3")
            #expect(try await harness.send(request).reason == "BadDeviceToken")

            request = try harness.validPush()
            request.body = nil
            request.set("apns-priority", "3")
            #expect(try await harness.send(request).reason == "BadPriority")

            var wrongMethod = try harness.validPush()
            wrongMethod.method = "PUT"
            wrongMethod.path = "/4/nothing"
            #expect(try await harness.send(wrongMethod).reason == "MethodNotAllowed")
            #expect(harness.gateway.requestCount == 5)
        }
    }

    @Test("Scripted outcomes are used one per request to that token, in order, then pushes are accepted")
    func scriptedOutcomes() async throws {
        try await withGateway { harness async throws in
            let token = deviceToken(7)
            let unregisteredAt = Date(timeIntervalSince1970: 1_700_000_000.123)
            harness.gateway.script(
                token: token,
                [
                    .unregistered(since: unregisteredAt),
                    .tooManyRequests(retryAfterSeconds: 30),
                    .reject(status: 400, reason: "DeviceTokenNotForTopic"),
                    .accept,
                    .serviceUnavailable,
                ]
            )
            let other = try await harness.send(try harness.validPush(to: deviceToken(8)))
            #expect(other.status == 200)

            let gone = try await harness.send(try harness.validPush(to: token))
            #expect(gone.status == 410)
            #expect(gone.reason == "Unregistered")
            #expect(gone.timestamp == 1_700_000_000_123)
            #expect(gone.retryAfter == nil)

            let tooMany = try await harness.send(try harness.validPush(to: token))
            #expect(tooMany.status == 429)
            #expect(tooMany.reason == "TooManyRequests")
            #expect(tooMany.retryAfter == "30")
            #expect(tooMany.timestamp == nil)

            let wrongTopic = try await harness.send(try harness.validPush(to: token))
            #expect(wrongTopic.status == 400)
            #expect(wrongTopic.reason == "DeviceTokenNotForTopic")

            #expect(try await harness.send(try harness.validPush(to: token)).status == 200)
            #expect(try await harness.send(try harness.validPush(to: token)).status == 503)
            for _ in 0..<2 {
                #expect(try await harness.send(try harness.validPush(to: token)).status == 200)
            }
            #expect(harness.gateway.pushes(to: token).count == 3)
            #expect(harness.gateway.requestCount == 8)
        }
    }

    @Test("An invalid request does not use up the token's script")
    func invalidRequestKeepsScript() async throws {
        try await withGateway { harness async throws in
            let token = deviceToken(3)
            harness.gateway.script(token: token, [.badDeviceToken])
            var request = try harness.validPush(to: token)
            request.set("apns-topic", nil)
            #expect(try await harness.send(request).reason == "MissingTopic")
            #expect(try await harness.send(try harness.validPush(to: token)).reason == "BadDeviceToken")
            #expect(try await harness.send(try harness.validPush(to: token)).status == 200)
        }
    }

    @Test("A rejection can carry both a timestamp and retry-after")
    func rejectWithTimestampAndRetryAfter() async throws {
        try await withGateway { harness async throws in
            let token = deviceToken(4)
            let when = Date(timeIntervalSince1970: 1_650_000_000)
            harness.gateway.script(
                token: token,
                [.reject(status: 503, reason: "ServiceUnavailable", timestamp: when, retryAfterSeconds: 5)]
            )
            let answer = try await harness.send(try harness.validPush(to: token))
            #expect(answer.status == 503)
            #expect(answer.reason == "ServiceUnavailable")
            #expect(answer.timestamp == 1_650_000_000_000)
            #expect(answer.retryAfter == "5")
            #expect(harness.gateway.acceptedPushes.isEmpty)
        }
    }

    @Test("A delayed outcome answers 200 after the delay, and latency slows every answer")
    func delayAndLatency() async throws {
        try await withGateway { harness async throws in
            let clock = ContinuousClock()
            let token = deviceToken(5)
            harness.gateway.script(token: token, [.delay(.milliseconds(300))])
            var start = clock.now
            #expect(try await harness.send(try harness.validPush(to: token)).status == 200)
            #expect(clock.now - start >= .milliseconds(300))
            #expect(harness.gateway.pushes(to: token).count == 1)

            harness.gateway.setLatency(.milliseconds(500))
            start = clock.now
            #expect(try await harness.send(try harness.validPush(to: token)).status == 200)
            #expect(clock.now - start >= .milliseconds(500))

            var refused = try harness.validPush(to: token)
            refused.set("apns-topic", nil)
            start = clock.now
            #expect(try await harness.send(refused).reason == "MissingTopic")
            #expect(clock.now - start >= .milliseconds(500))

            // Cleared from a latency far beyond any delay of a loaded machine's own.
            harness.gateway.setLatency(.seconds(30))
            harness.gateway.setLatency(.zero)
            start = clock.now
            #expect(try await harness.send(try harness.validPush(to: token)).status == 200)
            #expect(clock.now - start < .seconds(10))
        }
    }

    @Test("Dropping the connection fails the request; the next one, on a new connection, is accepted")
    func dropConnection() async throws {
        try await withGateway { harness async throws in
            let token = deviceToken(6)
            harness.gateway.script(token: token, [.dropConnection])
            await #expect(throws: (any Error).self) {
                _ = try await harness.send(try harness.validPush(to: token))
            }
            #expect(harness.gateway.requestCount == 1)
            #expect(harness.gateway.acceptedPushes.isEmpty)
            // AsyncHTTPClient may hand the next request to the dead connection before its pool notices the close
            // (it then fails with "I/O on closed channel" or "cancelled", never reaching the gateway), so retry
            // as an APNs client would.
            var answer: PushAnswer?
            for attempt in 1...5 where answer == nil {
                do {
                    answer = try await harness.send(try harness.validPush(to: token))
                } catch  where attempt < 5 {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            #expect(answer?.status == 200)
            #expect(answer?.isHTTP2 == true)
            #expect(harness.gateway.pushes(to: token).count == 1)
            #expect(harness.gateway.requestCount == 2)
        }
    }

    @Test("Random failures follow the seed: the same seed gives the same sequence")
    func randomFailuresAreDeterministic() async throws {
        try await withGateway { harness async throws in
            func statuses(seed: UInt64) async throws -> [UInt] {
                harness.gateway.reset()
                harness.gateway.setRandomFailures(rate: 0.5, seed: seed, outcome: .serviceUnavailable)
                var statuses: [UInt] = []
                for index in 0..<40 {
                    statuses.append(try await harness.send(try harness.validPush(to: deviceToken(index))).status)
                }
                return statuses
            }
            let first = try await statuses(seed: 42)
            let again = try await statuses(seed: 42)
            let other = try await statuses(seed: 43)
            #expect(first == again)
            #expect(first != other)
            #expect(first.contains(200))
            #expect(first.contains(503))
            #expect(Set(first).isSubset(of: [200, 503]))
            #expect(harness.gateway.acceptedCount == other.filter { $0 == 200 }.count)

            harness.gateway.setRandomFailures(rate: 0, seed: 42, outcome: .serviceUnavailable)
            for index in 0..<10 {
                #expect(try await harness.send(try harness.validPush(to: deviceToken(index))).status == 200)
            }
        }
    }

    @Test("Scripted outcomes come before random failures")
    func scriptBeforeRandomFailures() async throws {
        try await withGateway { harness async throws in
            harness.gateway.setRandomFailures(rate: 1, seed: 1, outcome: .internalServerError)
            let token = deviceToken(9)
            harness.gateway.script(token: token, [.accept])
            #expect(try await harness.send(try harness.validPush(to: token)).status == 200)
            let failed = try await harness.send(try harness.validPush(to: token))
            #expect(failed.status == 500)
            #expect(failed.reason == "InternalServerError")
        }
    }

    @Test("200 concurrent pushes on one client are all accepted")
    func concurrentPushes() async throws {
        try await withGateway { harness async throws in
            let jwt = try harness.key.token()
            let answers = try await withThrowingTaskGroup(of: PushAnswer.self) { group in
                for index in 0..<200 {
                    group.addTask {
                        try await harness.send(PushRequest(token: deviceToken(index), jwt: jwt))
                    }
                }
                var answers: [PushAnswer] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
            #expect(answers.count == 200)
            #expect(answers.allSatisfy { $0.status == 200 && $0.isHTTP2 })
            #expect(Set(answers.compactMap(\.apnsID)).count == 200)
            #expect(harness.gateway.acceptedPushes.count == 200)
            #expect(Set(harness.gateway.acceptedPushes.map(\.token)).count == 200)
            #expect(harness.gateway.requestCount == 200)
        }
    }

    @Test("With recording off, accepted pushes are counted but not kept; reset clears counts")
    func recordingOffAndReset() async throws {
        try await withGateway { harness async throws in
            harness.gateway.setRecording(false)
            for index in 0..<3 {
                #expect(try await harness.send(try harness.validPush(to: deviceToken(index))).status == 200)
            }
            #expect(harness.gateway.acceptedCount == 3)
            #expect(harness.gateway.acceptedPushes.isEmpty)

            harness.gateway.setRecording(true)
            harness.gateway.script(token: deviceToken(0), [.badDeviceToken])
            harness.gateway.setLatency(.seconds(30))
            harness.gateway.reset()
            #expect(harness.gateway.acceptedCount == 0)
            #expect(harness.gateway.requestCount == 0)
            let clock = ContinuousClock()
            let start = clock.now
            #expect(try await harness.send(try harness.validPush(to: deviceToken(0))).status == 200)
            #expect(clock.now - start < .seconds(10))
            #expect(harness.gateway.acceptedPushes.count == 1)
        }
    }

    @Test("A key given as PEM is trusted; an APNs .p8 private key works too")
    func trustsPEMKeys() async throws {
        try await withGateway { harness async throws in
            let publicPEM = ProviderKey(teamID: "TEAMPUBLIC", keyID: "KEYPUBLIC1")
            try harness.gateway.trust(
                teamID: publicPEM.teamID, keyID: publicPEM.keyID, pem: publicPEM.privateKey.publicKey.pemRepresentation
            )
            let privatePEM = ProviderKey(teamID: "TEAMPRIVAT", keyID: "KEYPRIVAT1")
            try harness.gateway.trust(
                teamID: privatePEM.teamID, keyID: privatePEM.keyID, pem: privatePEM.privateKey.pemRepresentation
            )
            for key in [publicPEM, privatePEM] {
                #expect(try await harness.send(PushRequest(token: deviceToken(), jwt: try key.token())).status == 200)
            }
            #expect(throws: (any Error).self) {
                try harness.gateway.trust(teamID: "T", keyID: "K", pem: "not a key")
            }
            harness.gateway.distrustAllKeys()
            let refused = try await harness.send(PushRequest(token: deviceToken(), jwt: try publicPEM.token()))
            #expect(refused.reason == "InvalidProviderToken")
        }
    }

    @Test("After stop, the port refuses connections; stopping twice is harmless")
    func stop() async throws {
        let harness = try await GatewayHarness.start()
        let client = try GatewayHarness.makeClient(trusting: harness.gateway)
        // Clients are shut down whatever happens: one dropped unshut traps in debug builds, ending the test run.
        do {
            #expect(try await harness.send(try harness.validPush()).status == 200)
            try await harness.gateway.stop()
            try await harness.gateway.stop()
            let fresh = GatewayHarness(gateway: harness.gateway, client: client, key: harness.key)
            await #expect(throws: (any Error).self) {
                _ = try await fresh.send(try fresh.validPush(), timeoutSeconds: 1)
            }
        } catch {
            Issue.record(error)
        }
        try await client.shutdown()
        try await harness.client.shutdown()
    }
}

/// One way a push request can be wrong, and what APNs answers.
struct RefusalCase: Sendable, CustomTestStringConvertible {
    var name: String
    var status: UInt
    var reason: String
    var configure: @Sendable (SandboxAPNsGateway) -> Void = { _ in }
    var change: @Sendable (inout PushRequest, ProviderKey) throws -> Void

    var testDescription: String { "\(name) → \(status) \(reason)" }

    static let all: [RefusalCase] = [
        RefusalCase(name: "GET", status: 405, reason: "MethodNotAllowed") { request, _ in
            request.method = "GET"
            request.body = nil
        },
        RefusalCase(name: "path outside /3/device/", status: 404, reason: "BadPath") { request, _ in
            request.path = "/3/devices/\(deviceToken())"
        },
        RefusalCase(name: "path with extra segment", status: 404, reason: "BadPath") { request, _ in
            request.path = "/3/device/\(deviceToken())/more"
        },
        RefusalCase(name: "no authorization", status: 403, reason: "MissingProviderToken") { request, _ in
            request.set("authorization", nil)
        },
        RefusalCase(name: "basic authorization", status: 403, reason: "MissingProviderToken") { request, _ in
            request.set("authorization", "Basic dXNlcjpwYXNz")
        },
        RefusalCase(name: "malformed JWT", status: 403, reason: "InvalidProviderToken") { request, _ in
            request.set("authorization", "bearer not-a-jwt")
        },
        RefusalCase(name: "JWT with alg HS256", status: 403, reason: "InvalidProviderToken") { request, key in
            request.set("authorization", "bearer \(try key.token(algorithm: "HS256"))")
        },
        RefusalCase(name: "JWT from an untrusted key", status: 403, reason: "InvalidProviderToken") { request, _ in
            request.set("authorization", "bearer \(try ProviderKey(keyID: "OTHERKEY12").token())")
        },
        RefusalCase(name: "JWT with an unknown team", status: 403, reason: "InvalidProviderToken") { request, key in
            request.set("authorization", "bearer \(try key.token(teamID: "OTHERTEAM1"))")
        },
        RefusalCase(name: "JWT signed by the wrong key", status: 403, reason: "InvalidProviderToken") { request, key in
            let forged = ProviderKey(teamID: key.teamID, keyID: key.keyID)
            request.set("authorization", "bearer \(try forged.token())")
        },
        RefusalCase(name: "JWT with a tampered payload", status: 403, reason: "InvalidProviderToken") { request, key in
            let parts = try key.token().split(separator: ".").map(String.init)
            let claims = base64URL(Data(#"{"iss":"\#(key.teamID)","iat":\#(Int(Date().timeIntervalSince1970) + 1)}"#.utf8))
            request.set("authorization", "bearer \(parts[0]).\(claims).\(parts[2])")
        },
        RefusalCase(name: "JWT issued over an hour ago", status: 403, reason: "ExpiredProviderToken") { request, key in
            request.set("authorization", "bearer \(try key.token(issuedAt: Date().addingTimeInterval(-3700)))")
        },
        RefusalCase(name: "no apns-topic", status: 400, reason: "MissingTopic") { request, _ in
            request.set("apns-topic", nil)
        },
        RefusalCase(
            name: "topic not allowed", status: 400, reason: "TopicDisallowed",
            configure: { $0.allowTopics(["com.example.other"]) }
        ) { _, _ in },
        RefusalCase(name: "short token", status: 400, reason: "BadDeviceToken") { request, _ in
            request.path = "/3/device/abcdef"
        },
        RefusalCase(name: "non-hex token", status: 400, reason: "BadDeviceToken") { request, _ in
            request.path = "/3/device/" + String(repeating: "zz", count: 32)
        },
        RefusalCase(name: "token too long", status: 400, reason: "BadDeviceToken") { request, _ in
            request.path = "/3/device/" + String(repeating: "ab", count: 101)
        },
        RefusalCase(name: "unknown push type", status: 400, reason: "InvalidPushType") { request, _ in
            request.set("apns-push-type", "banner")
        },
        RefusalCase(name: "priority 7", status: 400, reason: "BadPriority") { request, _ in
            request.set("apns-priority", "7")
        },
        RefusalCase(name: "expiration not an integer", status: 400, reason: "BadExpirationDate") { request, _ in
            request.set("apns-expiration", "tomorrow")
        },
        RefusalCase(name: "apns-id not a UUID", status: 400, reason: "BadMessageId") { request, _ in
            request.set("apns-id", "message-1")
        },
        RefusalCase(name: "collapse id over 64 bytes", status: 400, reason: "BadCollapseId") { request, _ in
            request.set("apns-collapse-id", String(repeating: "c", count: 65))
        },
        RefusalCase(name: "empty body", status: 400, reason: "PayloadEmpty") { request, _ in
            request.body = nil
        },
        RefusalCase(name: "body over 4096 bytes", status: 413, reason: "PayloadTooLarge") { request, _ in
            request.body = #"{"aps":{"alert":""# + String(repeating: "x", count: 4096) + #""}}"#
        },
        RefusalCase(name: "body a JSON array", status: 400, reason: "BadPayload") { request, _ in
            request.body = "[1,2,3]"
        },
        RefusalCase(name: "body not JSON", status: 400, reason: "BadPayload") { request, _ in
            request.body = "hello"
        },
    ]
}
