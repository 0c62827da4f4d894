import Foundation
import Synchronization
import Testing

@testable import NotifiableDelivery

@Suite struct FCMAccessTokensTests {
    /// An exchange that counts its calls, answers `token-N` after `delay`, or fails as scripted.
    final class Exchanges: Sendable {
        let calls = Counter()
        private let failures = Mutex<[FCMAccessTokenError]>([])
        let lifetime: Duration
        let delay: Duration

        init(lifetime: Duration = .seconds(3600), delay: Duration = .zero) {
            self.lifetime = lifetime
            self.delay = delay
        }

        func failNext(_ errors: FCMAccessTokenError...) {
            failures.withLock { $0.append(contentsOf: errors) }
        }

        var exchange: FCMAccessTokens.Exchange {
            { () async throws(FCMAccessTokenError) -> FCMAccessToken in
                let call = self.calls.next()
                if self.delay > .zero { try? await Task.sleep(for: self.delay) }
                if let failure = self.failures.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { throw failure }
                return FCMAccessToken(value: "token-\(call)", lifetime: self.lifetime)
            }
        }
    }

    let clock = APNsTestClock(Date(timeIntervalSince1970: 1_800_000_000))

    func tokens(_ exchanges: Exchanges) -> FCMAccessTokens {
        let clock = self.clock
        return FCMAccessTokens(exchange: exchanges.exchange, now: { clock.now })
    }

    @Test func concurrentCallersWithAnEmptyCacheShareOneExchange() async throws {
        let exchanges = Exchanges(delay: .milliseconds(100))
        let tokens = tokens(exchanges)
        let received = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<200 { group.addTask { try await tokens.token() } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(received.count == 200)
        #expect(Set(received) == ["token-1"])
        #expect(exchanges.calls.count == 1)
        // Cached afterwards.
        #expect(try await tokens.token() == "token-1")
        #expect(exchanges.calls.count == 1)
    }

    @Test func aTokenIsReplacedAMinuteBeforeItExpires() async throws {
        let exchanges = Exchanges(lifetime: .seconds(3600))
        let tokens = tokens(exchanges)
        #expect(try await tokens.token() == "token-1")
        clock.advance(by: 3539)
        #expect(try await tokens.token() == "token-1")
        clock.advance(by: 1)
        #expect(try await tokens.token() == "token-2")
        #expect(exchanges.calls.count == 2)
    }

    @Test func aShortLivedTokenIsReplacedWithATenthOfItsLifeLeft() async throws {
        let exchanges = Exchanges(lifetime: .seconds(100))
        let tokens = tokens(exchanges)
        #expect(try await tokens.token() == "token-1")
        clock.advance(by: 89)
        #expect(try await tokens.token() == "token-1")
        clock.advance(by: 1)
        #expect(try await tokens.token() == "token-2")
    }

    @Test func refreshingARejectedTokenExchangesOnceForAllWhoReportIt() async throws {
        let exchanges = Exchanges(delay: .milliseconds(50))
        let tokens = tokens(exchanges)
        let rejected = try await tokens.token()
        let renewed = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<200 { group.addTask { try await tokens.refresh(rejected: rejected) } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(Set(renewed) == ["token-2"])
        #expect(exchanges.calls.count == 2)
        // A late report of the old token changes nothing.
        #expect(try await tokens.refresh(rejected: rejected) == "token-2")
        #expect(exchanges.calls.count == 2)
        // The current one rejected: a new exchange.
        #expect(try await tokens.refresh(rejected: "token-2") == "token-3")
    }

    @Test func aRejectedTokenIsNotHandedOutAgainWhenTheExchangeFails() async throws {
        let exchanges = Exchanges()
        let tokens = tokens(exchanges)
        let rejected = try await tokens.token()
        exchanges.failNext(.unavailable("token endpoint down", retryAfter: .seconds(3)))
        await #expect(throws: FCMAccessTokenError.unavailable("token endpoint down", retryAfter: .seconds(3))) {
            try await tokens.refresh(rejected: rejected)
        }
        #expect(try await tokens.token() == "token-3")
    }

    @Test func aPassingFailureKeepsAStillValidToken() async throws {
        let exchanges = Exchanges(lifetime: .seconds(3600))
        let tokens = tokens(exchanges)
        #expect(try await tokens.token() == "token-1")
        clock.advance(by: 3570)
        exchanges.failNext(.unavailable("timeout", retryAfter: nil))
        #expect(try await tokens.token() == "token-1")
        // Once expired, the failure is the answer.
        clock.advance(by: 30)
        exchanges.failNext(.unavailable("timeout", retryAfter: nil))
        await #expect(throws: FCMAccessTokenError.unavailable("timeout", retryAfter: nil)) { try await tokens.token() }
        #expect(try await tokens.token() == "token-4")
    }

    @Test func aRefusalIsRememberedBriefly() async throws {
        let exchanges = Exchanges()
        let tokens = tokens(exchanges)
        let refusal = FCMAccessTokenError.misconfigured("access token refused: invalid_grant")
        exchanges.failNext(refusal)
        for _ in 0..<5 {
            await #expect(throws: refusal) { try await tokens.token() }
        }
        #expect(exchanges.calls.count == 1)
        clock.advance(by: 10)
        #expect(try await tokens.token() == "token-2")
    }
}
