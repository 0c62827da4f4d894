import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NotifiableCore
import NotifiableSandbox
import NotifiableTesting
import Testing

@testable import NotifiableDelivery

/// ``HTTPClientTransport`` over real TLS and HTTP/2. The fake APNs gateway serves here as an HTTP/2-only server
/// with a self-signed certificate: the client reaching it at all shows ALPN chose `h2` and the CA was trusted.
@Suite(.serialized, .timeLimit(.minutes(1))) struct FCMHTTPClientTests {
    static let teamID = "TEAMFCMH2T"
    static let keyID = "KEYFCMH2T1"

    /// A POST the fake accepts: an APNs path, topic and provider token, with `body` as the payload.
    struct Post {
        let url: String
        let headers: [(String, String)]
    }

    static func post(_ gateway: SandboxAPNsGateway, token n: Int) -> Post {
        let key = P256.Signing.PrivateKey()
        gateway.trust(teamID: teamID, keyID: keyID, publicKey: key.publicKey)
        let jwt = APNsJWT.make(keyID: keyID, teamID: teamID, issuedAt: Date(), privateKey: key)
        return Post(
            url: gateway.baseURL + "/3/device/" + deviceToken(n),
            headers: [
                ("apns-topic", "com.example.fcm"), ("apns-push-type", "alert"), ("authorization", "bearer \(jwt)"),
            ])
    }

    static func deviceToken(_ n: Int) -> String {
        let hex = String(n, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }

    func withClient(trustingGateway: Bool = true, _ body: @Sendable (SandboxAPNsGateway, HTTPClientTransport) async throws -> Void) async throws {
        try await withFakeAPNs { gateway in
            let client = try HTTPClientTransport(
                trustedCAPEM: trustingGateway ? gateway.certificatePEM : nil, logger: Logger(label: "test.fcm-http")
            )
            do {
                try await body(gateway, client)
            } catch {
                await client.shutdown()
                throw error
            }
            await client.shutdown()
        }
    }

    @Test func postsOverHTTP2ToAServerOfTheTrustedCA() async throws {
        try await withClient { gateway, client in
            let post = Self.post(gateway, token: 1)
            let payload = #"{"aps":{"alert":"hi"}}"#
            let response = try await client.post(post.url, headers: post.headers, body: Array(payload.utf8), deadline: .seconds(10))
            #expect(response.status == 200)
            #expect(response.retryAfter == nil)
            let pushes = gateway.pushes(to: Self.deviceToken(1))
            try #require(pushes.count == 1)
            #expect(pushes[0].payloadString == payload)
            #expect(pushes[0].headers["apns-topic"] == "com.example.fcm")

            // Many at once share the client's connection.
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 2...101 {
                    group.addTask {
                        try await client.post(
                            post.url.replacingOccurrences(of: Self.deviceToken(1), with: Self.deviceToken(n)),
                            headers: post.headers, body: Array(payload.utf8), deadline: .seconds(10)
                        ).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 100))
            #expect(gateway.acceptedCount == 101)
        }
    }

    @Test func errorAnswersComeBackWithTheirBodyAndRetryAfter() async throws {
        try await withClient { gateway, client in
            let post = Self.post(gateway, token: 429)
            gateway.script(token: Self.deviceToken(429), [.tooManyRequests(retryAfterSeconds: 30)])
            let response = try await client.post(post.url, headers: post.headers, body: Array("{}".utf8), deadline: .seconds(10))
            #expect(response.status == 429)
            #expect(response.retryAfter == "30")
            #expect(String(decoding: response.body, as: UTF8.self) == #"{"reason":"TooManyRequests"}"#)
        }
    }

    @Test func aServerOutsideTheTrustedRootsIsRefused() async throws {
        try await withClient(trustingGateway: false) { gateway, client in
            let post = Self.post(gateway, token: 2)
            do {
                _ = try await client.post(post.url, headers: post.headers, body: [], deadline: .seconds(10))
                Issue.record("a self-signed server was trusted")
            } catch {
                guard case .retry(let reason, nil) = FCMResponseClassifier.classify(transportError: error) else {
                    Issue.record("a TLS failure is not a retry")
                    return
                }
                #expect(reason.hasPrefix("TLS error"))
            }
            #expect(gateway.requestCount == 0)
        }
    }

    @Test func aSlowAnswerRunsIntoTheDeadline() async throws {
        try await withClient { gateway, client in
            let post = Self.post(gateway, token: 3)
            // Connected first: a TLS handshake past 300 ms on a starved machine fails before the
            // request is written, which is another case (the pool's wait, a plain retry).
            _ = try await client.post(post.url, headers: post.headers, body: [], deadline: .seconds(30))
            gateway.setLatency(.seconds(20))
            let started = ContinuousClock.now
            do {
                _ = try await client.post(post.url, headers: post.headers, body: [], deadline: .milliseconds(300))
                Issue.record("answered after its deadline")
            } catch {
                // The request was on the wire: FCM may have taken it.
                #expect(FCMResponseClassifier.classify(transportError: error) == .outcomeUnknown(reason: "request deadline exceeded"))
            }
            // Well before the answer would come, even on a busy machine.
            #expect(started.duration(to: .now) < .seconds(10))
        }
    }
}
