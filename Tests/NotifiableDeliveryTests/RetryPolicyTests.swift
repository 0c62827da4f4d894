import Foundation
import NotifiableCore
import NotifiableSandbox
import Testing

@testable import NotifiableDelivery

@Suite struct RetryPolicyTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)
    let noJitter = RetryPolicy(jitter: 0)

    func delay(_ policy: RetryPolicy, after attempts: Int, retryAfter: Duration? = nil, expiresAt: Date? = nil) -> TimeInterval? {
        var random = SplitMix64(seed: 1)
        return policy.nextAttempt(after: attempts, retryAfter: retryAfter, now: now, expiresAt: expiresAt, random: &random)?
            .timeIntervalSince(now)
    }

    @Test func defaults() {
        let policy = RetryPolicy()
        #expect(policy.maxAttempts == 8)
        #expect(policy.baseDelay == .seconds(1))
        #expect(policy.maxDelay == .seconds(3600))
        #expect(policy.jitter == 0.5)
    }

    @Test func growsExponentially() {
        #expect(delay(noJitter, after: 1) == 1)
        #expect(delay(noJitter, after: 2) == 2)
        #expect(delay(noJitter, after: 3) == 4)
        #expect(delay(noJitter, after: 7) == 64)
        let slow = RetryPolicy(baseDelay: .milliseconds(500), jitter: 0)
        #expect(delay(slow, after: 3) == 2)
    }

    @Test func attemptsBelowOneCountAsOne() {
        #expect(delay(noJitter, after: 0) == 1)
        #expect(delay(noJitter, after: -3) == 1)
    }

    @Test func capsAtMaxDelay() {
        let policy = RetryPolicy(maxAttempts: 1000, baseDelay: .seconds(1), maxDelay: .seconds(3600), jitter: 0)
        #expect(delay(policy, after: 12) == 2048)
        #expect(delay(policy, after: 13) == 3600)
        #expect(delay(policy, after: 999) == 3600)  // 2^998 overflows nothing
        #expect(policy.backoff(after: 40) == .seconds(3600))
        let short = RetryPolicy(maxAttempts: 100, baseDelay: .seconds(10), maxDelay: .seconds(30), jitter: 0)
        #expect(delay(short, after: 2) == 20)
        #expect(delay(short, after: 3) == 30)
    }

    @Test func jitterStaysWithinBounds() {
        let policy = RetryPolicy(maxAttempts: 100)  // jitter 0.5
        var random = SplitMix64(seed: 42)
        var seen: [TimeInterval] = []
        for attempts in [1, 4, 10, 20] {
            let base = policy.backoff(after: attempts).seconds
            for _ in 0..<500 {
                let next = policy.nextAttempt(after: attempts, retryAfter: nil, now: now, expiresAt: nil, random: &random)
                let delay = try! #require(next).timeIntervalSince(now)
                #expect(delay >= base * 0.5 - 1e-6)
                #expect(delay <= base * 1.5 + 1e-6)
                if attempts == 4 { seen.append(delay / base) }
            }
        }
        // The factor actually varies and covers most of [0.5, 1.5].
        #expect(seen.min()! < 0.6)
        #expect(seen.max()! > 1.4)
        #expect(Set(seen).count > 400)
    }

    @Test func sameSeedSameSchedule() {
        let policy = RetryPolicy()
        var a = SplitMix64(seed: 7)
        var b = SplitMix64(seed: 7)
        for attempts in 1..<8 {
            #expect(
                policy.nextAttempt(after: attempts, retryAfter: nil, now: now, expiresAt: nil, random: &a)
                    == policy.nextAttempt(after: attempts, retryAfter: nil, now: now, expiresAt: nil, random: &b))
        }
    }

    @Test func retryAfterIsALowerBound() {
        // Longer than the backoff: honoured exactly, even beyond maxDelay.
        #expect(delay(noJitter, after: 1, retryAfter: .seconds(30)) == 30)
        #expect(delay(noJitter, after: 1, retryAfter: .seconds(7200)) == 7200)
        // Shorter than the backoff: the backoff wins.
        #expect(delay(noJitter, after: 5, retryAfter: .seconds(3)) == 16)
        // With jitter: never sooner than asked.
        let policy = RetryPolicy()
        var random = SplitMix64(seed: 3)
        for _ in 0..<200 {
            let next = policy.nextAttempt(after: 2, retryAfter: .seconds(10), now: now, expiresAt: nil, random: &random)
            #expect(next!.timeIntervalSince(now) >= 10)
        }
        #expect(delay(noJitter, after: 1, retryAfter: .milliseconds(1500)) == 1.5)
    }

    @Test func givesUpAfterMaxAttempts() {
        let policy = RetryPolicy(maxAttempts: 3, jitter: 0)
        #expect(delay(policy, after: 1) != nil)
        #expect(delay(policy, after: 2) != nil)
        #expect(delay(policy, after: 3) == nil)
        #expect(delay(policy, after: 4) == nil)
        #expect(delay(RetryPolicy(), after: 8) == nil)
        #expect(delay(RetryPolicy(), after: 7) != nil)
        #expect(RetryPolicy(maxAttempts: 1).nextAttempt(after: 1, retryAfter: nil, now: now, expiresAt: nil) == nil)
    }

    @Test func neverAtOrPastExpiry() {
        // Next time would be now + 4 s.
        #expect(delay(noJitter, after: 3, expiresAt: now.addingTimeInterval(5)) == 4)
        #expect(delay(noJitter, after: 3, expiresAt: now.addingTimeInterval(4)) == nil)
        #expect(delay(noJitter, after: 3, expiresAt: now.addingTimeInterval(3)) == nil)
        #expect(delay(noJitter, after: 1, expiresAt: now.addingTimeInterval(-10)) == nil)
        // A Retry-After that reaches past expiry gives up too.
        #expect(delay(noJitter, after: 1, retryAfter: .seconds(60), expiresAt: now.addingTimeInterval(59)) == nil)
    }

    @Test func systemRandomOverload() {
        let next = RetryPolicy().nextAttempt(after: 2, retryAfter: nil, now: now, expiresAt: nil)
        let seconds = next!.timeIntervalSince(now)
        #expect(seconds >= 1 && seconds <= 3)
    }
}
