/// Which share of valid requests a fake gateway fails, and how: for example 20% `unavailable`, 5% `reset-stream`,
/// 2% `unregistered` and 1% `timeout`, the rest accepted.
///
/// The draw for a request depends only on the seed, its device token and how many requests to that token came
/// before it, never on the order in which requests from many connections arrive: the same seed fails the same
/// attempts of the same tokens in every run, however the client schedules them.
public struct SandboxGatewayFaultMix: Sendable, Hashable {
    public struct Share: Sendable, Hashable {
        public var fault: SandboxGatewayFault
        /// From 0 to 1.
        public var share: Double

        public init(fault: SandboxGatewayFault, share: Double) {
            self.fault = fault
            self.share = share
        }
    }

    public let shares: [Share]
    public let seed: UInt64

    /// - Throws: when a share is negative or not a number, or the shares add up to more than 1.
    public init(_ shares: [Share], seed: UInt64) throws {
        for share in shares where !(share.share >= 0 && share.share <= 1) {
            throw SandboxGatewayError("The share of \(share.fault) must be between 0 and 1, not \(share.share).")
        }
        let total = shares.reduce(0) { $0 + $1.share }
        guard total <= 1 + 1e-9 else {
            throw SandboxGatewayError("The fault shares add up to \(total), more than 1.")
        }
        self.shares = shares
        self.seed = seed
    }

    /// Reads `NAME=SHARE` entries (see ``SandboxGatewayFault/init(name:)`` for the names), e.g. `unavailable=0.2`.
    public static func parse(_ entries: [String], seed: UInt64) throws -> SandboxGatewayFaultMix {
        let shares = try entries.map { entry -> Share in
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let fault = SandboxGatewayFault(name: parts[0]), let share = Double(parts[1]) else {
                throw SandboxGatewayError(
                    "A fault is NAME=SHARE with NAME one of unavailable, unavailable:SECONDS, reset-stream, "
                        + "drop-connection, unregistered, timeout and SHARE from 0 to 1; got \"\(entry)\"."
                )
            }
            return Share(fault: fault, share: share)
        }
        return try SandboxGatewayFaultMix(shares, seed: seed)
    }

    /// The fault for the request to `token` that follows `earlierRequests` requests to it, or nil to let it through.
    public func fault(token: String, earlierRequests: Int) -> SandboxGatewayFault? {
        var generator = SplitMix64(seed: seed ^ Self.fnv1a(token) ^ (UInt64(truncatingIfNeeded: earlierRequests) &* 0xD6E8_FEB8_6659_FD93))
        let draw = generator.nextUnit()
        var bound = 0.0
        for share in shares {
            bound += share.share
            if draw < bound { return share.fault }
        }
        return nil
    }

    /// FNV-1a: a hash that is the same in every process (Swift's `Hasher` is seeded per process).
    static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return hash
    }
}
