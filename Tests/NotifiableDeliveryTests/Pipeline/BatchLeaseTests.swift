import Testing

@testable import NotifiableDelivery

@Suite struct BatchLeaseTests {
    let start = ContinuousClock.now

    @Test func aSendStartsOnlyWhileTheLeaseOutlastsIt() {
        let lease = BatchLease(askedAt: start, lease: .seconds(10))
        #expect(lease.maySend(1, sendBudget: .seconds(2), now: start))
        #expect(lease.maySend(1, sendBudget: .seconds(2), now: start + .seconds(8)))
        #expect(!lease.maySend(1, sendBudget: .seconds(2), now: start + .milliseconds(8001)))
    }

    @Test func aRenewalCountsFromWhenItWasAskedAndNamesWhatWasLost() {
        let lease = BatchLease(askedAt: start, lease: .seconds(10))
        let (lost, margin) = lease.renewed(askedAt: start + .seconds(4), held: [1, 3], of: [1, 2, 3])
        #expect(lost == [2])
        #expect(margin == .seconds(6))
        #expect(lease.maySend(1, sendBudget: .seconds(2), now: start + .seconds(12)))
        #expect(!lease.maySend(2, sendBudget: .seconds(2), now: start + .seconds(4)), "a lost delivery is left to its new owner")
        // Renewed after the lease ran out: a negative margin, and only what the renewal held is kept.
        let (lostLate, late) = lease.renewed(askedAt: start + .seconds(15), held: [3], of: [1, 2, 3])
        #expect(lostLate == [1])
        #expect(late == .seconds(-1))
        #expect(lease.maySend(3, sendBudget: .seconds(2), now: start + .seconds(15)))
    }
}
