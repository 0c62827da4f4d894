import NotifiableCore
import Testing

@Suite struct TokenBucketTests {
    @Test(arguments: [
        ("100/s", RateLimit(count: 100, periodSeconds: 1)), ("6000/min", RateLimit(count: 6000, periodSeconds: 60)),
        (" 50 / h ", RateLimit(count: 50, periodSeconds: 3600)), ("7/second", RateLimit(count: 7, periodSeconds: 1)),
    ])
    func limitsAreReadAsOperatorsWriteThem(text: String, limit: RateLimit) {
        #expect(RateLimit.parse(text) == limit)
    }

    @Test(arguments: ["", "100", "0/s", "-5/s", "10/day", "ten/s", "10/s/s"])
    func anythingElseIsRefused(text: String) {
        #expect(RateLimit.parse(text) == nil)
    }

    @Test func aBucketAdmitsItsBurstThenOneRequestPerRefill() {
        let limit = RateLimit(count: 3, periodSeconds: 60)  // 3 at once, then one every 20 s
        var bucket = TokenBucket(limit: limit, share: 1, now: 1000)
        for _ in 0..<3 { #expect(bucket.take(limit: limit, share: 1, now: 1000) == nil) }
        let wait = bucket.take(limit: limit, share: 1, now: 1000)
        #expect(wait.map { abs($0 - 20) < 1e-9 } == true)
        // A refused request takes nothing: 19 s later one is still 1 s away.
        #expect(bucket.take(limit: limit, share: 1, now: 1019).map { abs($0 - 1) < 1e-9 } == true)
        #expect(bucket.take(limit: limit, share: 1, now: 1020) == nil)
        // Idle time refills at most the burst.
        for _ in 0..<3 { #expect(bucket.take(limit: limit, share: 1, now: 5000) == nil) }
        #expect(bucket.take(limit: limit, share: 1, now: 5000) != nil)
    }

    @Test func aProcessKeepsItsShareOfTheLimitButAlwaysOneRequest() {
        let limit = RateLimit(count: 10, periodSeconds: 1)
        var half = TokenBucket(limit: limit, share: 0.5, now: 0)
        let admitted = (0..<10).filter { _ in half.take(limit: limit, share: 0.5, now: 0) == nil }.count
        #expect(admitted == 5)
        #expect(half.take(limit: limit, share: 0.5, now: 0).map { abs($0 - 0.2) < 1e-9 } == true)  // refills at 5/s
        let tiny = RateLimit(count: 1, periodSeconds: 60)
        var shared = TokenBucket(limit: tiny, share: 0.25, now: 0)
        #expect(shared.take(limit: tiny, share: 0.25, now: 0) == nil)
    }

    @Test func aBatchTakesOneTokenPerItemAndOneLargerThanTheWholeAllowanceNeverFits() {
        let limit = RateLimit(count: 10, periodSeconds: 1)  // 10 at once, 10 a second
        var bucket = TokenBucket(limit: limit, share: 1, now: 0)
        #expect(bucket.take(count: 4, limit: limit, share: 1, now: 0) == nil)
        #expect(bucket.take(count: 6, limit: limit, share: 1, now: 0) == nil)
        // Empty: 3 more are 0.3 s away, and a refused batch takes nothing.
        #expect(bucket.take(count: 3, limit: limit, share: 1, now: 0).map { abs($0 - 0.3) < 1e-9 } == true)
        #expect(bucket.take(count: 3, limit: limit, share: 1, now: 0.3) == nil)
        // 500 against a limit of 10 never fits, however long it waits, and takes nothing.
        #expect(bucket.take(count: 500, limit: limit, share: 1, now: 100) == .infinity)
        #expect(bucket.take(count: 10, limit: limit, share: 1, now: 100) == nil)
    }

    @Test func aClockThatStepsBackDoesNotMintTokens() {
        let limit = RateLimit(count: 1, periodSeconds: 10)
        var bucket = TokenBucket(limit: limit, share: 1, now: 100)
        #expect(bucket.take(limit: limit, share: 1, now: 100) == nil)
        #expect(bucket.take(limit: limit, share: 1, now: 50) != nil)
        #expect(bucket.take(limit: limit, share: 1, now: 105) != nil)
        #expect(bucket.take(limit: limit, share: 1, now: 110) == nil)
    }
}
