import AsyncHTTPClient
import Foundation
import NotifiableSandbox
import Testing

@Suite("Fake FCM gateway: outcomes, latency and records", .timeLimit(.minutes(1)))
struct SandboxFCMOutcomeTests {
    @Test("A scripted outcome is answered with its status, error status, FcmError code and retry-after", arguments: ScriptedCase.all)
    func scriptedOutcome(_ scripted: ScriptedCase) async throws {
        try await withFCMGateway { harness async throws in
            let token = registrationToken(3)
            harness.gateway.script(token: token, [scripted.outcome])
            let accessToken = try await harness.accessToken()
            let other = try await harness.send(messageBody(to: registrationToken(4)), bearer: accessToken)
            #expect(other.status == 200)

            let answer = try await harness.send(messageBody(to: token), bearer: accessToken)
            #expect(answer.status == scripted.status)
            #expect(answer.isHTTP2)
            #expect(answer.errorCode == Int(scripted.status))
            #expect(answer.errorStatus == scripted.errorStatus)
            #expect(answer.fcmErrorCode == scripted.errorCode)
            #expect(answer.errorMessage?.isEmpty == false)
            #expect(answer.retryAfter == scripted.retryAfter)
            #expect(answer.violatedFields == scripted.violatedFields)
            #expect(harness.gateway.messages(to: token).isEmpty)

            #expect(try await harness.send(messageBody(to: token), bearer: accessToken).status == 200)
            #expect(harness.gateway.messages(to: token).count == 1)
            #expect(harness.gateway.sendRequestCount == 3)
        }
    }

    @Test("Scripted outcomes are used one per send to that token, in order, then sends are accepted")
    func scriptOrder() async throws {
        try await withFCMGateway { harness async throws in
            let token = registrationToken(5)
            harness.gateway.script(
                token: token,
                [
                    .reject(httpStatus: 503, status: "UNAVAILABLE", errorCode: nil, message: "Try later", retryAfterSeconds: 7),
                    .accept, .unregistered,
                ]
            )
            let accessToken = try await harness.accessToken()
            let first = try await harness.send(messageBody(to: token), bearer: accessToken)
            #expect(first.status == 503)
            #expect(first.fcmErrorCode == nil)
            #expect(first.errorMessage == "Try later")
            #expect(first.retryAfter == "7")
            #expect(try await harness.send(messageBody(to: token), bearer: accessToken).status == 200)
            #expect(try await harness.send(messageBody(to: token), bearer: accessToken).fcmErrorCode == "UNREGISTERED")
            #expect(try await harness.send(messageBody(to: token), bearer: accessToken).status == 200)
            harness.gateway.script(token: token, [.internalError])
            harness.gateway.script(token: token, [])
            #expect(try await harness.send(messageBody(to: token), bearer: accessToken).status == 200)
        }
    }

    @Test("A delayed outcome answers 200 after the delay; send and token latencies slow their endpoints")
    func delayAndLatency() async throws {
        try await withFCMGateway { harness async throws in
            let clock = ContinuousClock()
            let token = registrationToken(6)
            let accessToken = try await harness.accessToken()
            harness.gateway.script(token: token, [.delay(.milliseconds(300))])
            var start = clock.now
            #expect(try await harness.send(messageBody(to: token), bearer: accessToken).status == 200)
            #expect(clock.now - start >= .milliseconds(300))

            // Long enough that a loaded machine's own delays cannot be mistaken for it.
            let latency = Duration.seconds(4)
            harness.gateway.setLatency(latency)
            start = clock.now
            #expect(try await harness.send(messageBody(to: token), bearer: nil).status == 401)
            #expect(clock.now - start >= latency)
            // Signed before the clock starts: an RS256 signature in a debug build on a loaded
            // machine can take a good share of a second by itself, and it is not the latency under test.
            let assertion = try harness.account.assertion()
            start = clock.now
            #expect(try await harness.exchange(assertion: assertion).status == 200)
            #expect(clock.now - start < latency)

            harness.gateway.setLatency(.zero)
            harness.gateway.setTokenLatency(latency)
            start = clock.now
            #expect(try await harness.exchange(form: "grant_type=x").status == 400)
            #expect(clock.now - start >= latency)
            start = clock.now
            #expect(try await harness.send(messageBody(to: token), bearer: accessToken).status == 200)
            #expect(clock.now - start < latency)
        }
    }

    @Test("Dropping the connection fails the send; the next one, on a new connection, is accepted")
    func dropConnection() async throws {
        try await withFCMGateway { harness async throws in
            let token = registrationToken(7)
            let accessToken = try await harness.accessToken()
            harness.gateway.script(token: token, [.dropConnection])
            await #expect(throws: (any Error).self) {
                _ = try await harness.send(messageBody(to: token), bearer: accessToken)
            }
            #expect(harness.gateway.acceptedMessages.isEmpty)
            // AsyncHTTPClient may hand the next request to the dead connection before its pool notices the close,
            // so retry as an FCM client would.
            var answer: FCMAnswer?
            for attempt in 1...5 where answer == nil {
                do {
                    answer = try await harness.send(messageBody(to: token), bearer: accessToken)
                } catch  where attempt < 5 {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            #expect(answer?.status == 200)
            #expect(harness.gateway.messages(to: token).count == 1)
        }
    }

    @Test("Random failures follow the seed: the same seed gives the same sequence; scripts come first")
    func randomFailures() async throws {
        try await withFCMGateway { harness async throws in
            let accessToken = try await harness.accessToken()
            func statuses(seed: UInt64) async throws -> [UInt] {
                harness.gateway.reset()
                harness.gateway.setRandomFailures(rate: 0.5, seed: seed, outcome: .quotaExceeded(retryAfterSeconds: 1))
                var statuses: [UInt] = []
                for index in 0..<30 {
                    statuses.append(try await harness.send(messageBody(to: registrationToken(index)), bearer: accessToken).status)
                }
                return statuses
            }
            let first = try await statuses(seed: 42)
            let again = try await statuses(seed: 42)
            let other = try await statuses(seed: 43)
            #expect(first == again)
            #expect(first != other)
            #expect(Set(first) == [200, 429])
            #expect(harness.gateway.acceptedCount == other.filter { $0 == 200 }.count)

            harness.gateway.setRandomFailures(rate: 1, seed: 1)
            harness.gateway.script(token: registrationToken(), [.accept])
            #expect(try await harness.send(messageBody(to: registrationToken()), bearer: accessToken).status == 200)
            let failed = try await harness.send(messageBody(to: registrationToken()), bearer: accessToken)
            #expect(failed.status == 503)
            #expect(failed.fcmErrorCode == "UNAVAILABLE")
        }
    }

    @Test("takeMessage(named:) removes and returns the message with that name")
    func takeMessage() async throws {
        try await withFCMGateway { harness async throws in
            let accessToken = try await harness.accessToken()
            var names: [String] = []
            for index in 0..<3 {
                names.append(try #require(try await harness.send(messageBody(to: registrationToken(index)), bearer: accessToken).name))
            }
            #expect(Set(names).count == 3)
            let taken = try #require(harness.gateway.takeMessage(named: names[1]))
            #expect(taken.name == names[1])
            #expect(taken.token == registrationToken(1))
            #expect(harness.gateway.takeMessage(named: names[1]) == nil)
            #expect(harness.gateway.takeMessage(named: "projects/demo-project/messages/none") == nil)
            #expect(harness.gateway.acceptedMessages.map(\.name) == [names[0], names[2]])
            #expect(harness.gateway.acceptedCount == 3)
        }
    }

    @Test("reset() forgets records, counts, scripts, failures and latency, and keeps accounts and tokens")
    func reset() async throws {
        try await withFCMGateway { harness async throws in
            let accessToken = try await harness.accessToken()
            let token = registrationToken(8)
            #expect(try await harness.send(messageBody(to: token), bearer: accessToken).status == 200)
            harness.gateway.script(token: token, [.unregistered])
            harness.gateway.setRandomFailures(rate: 1, seed: 3)
            harness.gateway.setLatency(.seconds(30))
            harness.gateway.setTokenLatency(.seconds(30))
            harness.gateway.setAccessTokenLifetime(seconds: 10)
            harness.gateway.reset()
            #expect(harness.gateway.acceptedMessages.isEmpty)
            #expect(harness.gateway.acceptedCount == 0)
            #expect(harness.gateway.sendRequestCount == 0)
            #expect(harness.gateway.tokenRequestCount == 0)
            #expect(harness.gateway.tokensIssued == 0)

            let clock = ContinuousClock()
            let start = clock.now
            #expect(try await harness.send(messageBody(to: token), bearer: accessToken).status == 200)
            let exchange = try await harness.exchange(assertion: try harness.account.assertion())
            #expect(exchange.expiresIn == 3599)
            #expect(clock.now - start < .seconds(20))
            #expect(harness.gateway.acceptedMessages.count == 1)
        }
    }

    @Test("Token requests are counted, refused ones included; issued tokens only when granted")
    func tokenCounts() async throws {
        try await withFCMGateway { harness async throws in
            _ = try await harness.accessToken()
            _ = try await harness.exchange(assertion: try harness.account.assertion(audience: "https://elsewhere/token"))
            _ = try await harness.exchange(form: "")
            #expect(try await harness.request("GET", "/token").status == 405)
            _ = try await harness.accessToken()
            #expect(harness.gateway.tokenRequestCount == 5)
            #expect(harness.gateway.tokensIssued == 2)
            #expect(harness.gateway.sendRequestCount == 0)
        }
    }

    @Test("With recording off, accepted messages are counted but not kept")
    func recordingOff() async throws {
        try await withFCMGateway { harness async throws in
            harness.gateway.setRecording(false)
            let accessToken = try await harness.accessToken()
            for index in 0..<3 {
                #expect(try await harness.send(messageBody(to: registrationToken(index)), bearer: accessToken).status == 200)
            }
            #expect(harness.gateway.acceptedCount == 3)
            #expect(harness.gateway.acceptedMessages.isEmpty)
        }
    }

    @Test("100 concurrent sends on one client are all accepted")
    func concurrentSends() async throws {
        try await withFCMGateway { harness async throws in
            let accessToken = try await harness.accessToken()
            let answers = try await withThrowingTaskGroup(of: FCMAnswer.self) { group in
                for index in 0..<100 {
                    group.addTask { try await harness.send(messageBody(to: registrationToken(index)), bearer: accessToken) }
                }
                var answers: [FCMAnswer] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
            #expect(answers.allSatisfy { $0.status == 200 && $0.isHTTP2 })
            #expect(Set(answers.compactMap(\.name)).count == 100)
            #expect(harness.gateway.acceptedMessages.count == 100)
        }
    }
}

/// A scripted outcome and what the client must see.
struct ScriptedCase: Sendable, CustomTestStringConvertible {
    var name: String
    var outcome: SandboxFCMOutcome
    var status: UInt
    var errorStatus: String
    var errorCode: String?
    var retryAfter: String? = nil
    var violatedFields: [String] = []

    var testDescription: String { name }

    static let all: [ScriptedCase] = [
        ScriptedCase(name: "unregistered", outcome: .unregistered, status: 404, errorStatus: "NOT_FOUND", errorCode: "UNREGISTERED"),
        ScriptedCase(
            name: "senderIDMismatch", outcome: .senderIDMismatch, status: 403, errorStatus: "PERMISSION_DENIED",
            errorCode: "SENDER_ID_MISMATCH"
        ),
        ScriptedCase(
            name: "invalidToken", outcome: .invalidToken, status: 400, errorStatus: "INVALID_ARGUMENT",
            errorCode: "INVALID_ARGUMENT", violatedFields: ["message.token"]
        ),
        ScriptedCase(
            name: "invalidPayload", outcome: .invalidPayload, status: 400, errorStatus: "INVALID_ARGUMENT",
            errorCode: "INVALID_ARGUMENT", violatedFields: ["message.data[0].value"]
        ),
        ScriptedCase(
            name: "quotaExceeded", outcome: .quotaExceeded(retryAfterSeconds: 30), status: 429,
            errorStatus: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED", retryAfter: "30"
        ),
        ScriptedCase(
            name: "quotaExceeded without retry-after", outcome: .quotaExceeded(), status: 429,
            errorStatus: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED"
        ),
        ScriptedCase(
            name: "unavailable", outcome: .unavailable(retryAfterSeconds: 5), status: 503, errorStatus: "UNAVAILABLE",
            errorCode: "UNAVAILABLE", retryAfter: "5"
        ),
        ScriptedCase(name: "internalError", outcome: .internalError, status: 500, errorStatus: "INTERNAL", errorCode: "INTERNAL"),
        ScriptedCase(
            name: "thirdPartyAuthError", outcome: .thirdPartyAuthError, status: 401, errorStatus: "UNAUTHENTICATED",
            errorCode: "THIRD_PARTY_AUTH_ERROR"
        ),
    ]
}
