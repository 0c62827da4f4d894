import Foundation
import Testing

@testable import NotifiableApp

/// The throttle's clock, driven by hand: the wait it answers shrinks as time passes and ends when
/// the oldest failure leaves the window; its memory stays bounded.
@Suite struct SignInThrottleTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aClientWaitsUntilItsOldestFailureLeavesTheWindow() {
        let throttle = SignInThrottle(limit: 3, window: 60)
        for second in [0.0, 10, 20] { throttle.fail("a", now: start.addingTimeInterval(second)) }
        #expect(throttle.retryAfter("a", now: start.addingTimeInterval(20)) == 40)
        #expect(throttle.retryAfter("a", now: start.addingTimeInterval(50)) == 10)
        #expect(throttle.retryAfter("b", now: start.addingTimeInterval(50)) == nil, "another client is not held")
        // The first failure has left the window: two remain, under the limit.
        #expect(throttle.retryAfter("a", now: start.addingTimeInterval(60.5)) == nil)
        throttle.fail("a", now: start.addingTimeInterval(61))
        #expect(throttle.retryAfter("a", now: start.addingTimeInterval(61)) == 9, "until the failure at 10 s leaves")
    }

    @Test func memoryStaysBoundedWhoeverGuesses() {
        let throttle = SignInThrottle(limit: 3, window: 60, maxClients: 100)
        for client in 0..<100 { throttle.fail("old-\(client)", now: start) }
        #expect(throttle.clientCount == 100)
        // A minute later the old clients no longer matter: past the bound, they go.
        throttle.fail("new", now: start.addingTimeInterval(120))
        #expect(throttle.clientCount == 1)
        // All recent: past the bound, everyone is forgotten but the client failing now.
        for client in 0..<100 { throttle.fail("burst-\(client)", now: start.addingTimeInterval(130)) }
        #expect(throttle.clientCount == 1)
        #expect(throttle.retryAfter("burst-99", now: start.addingTimeInterval(130)) == nil)
    }
}
