extension Duration {
    /// The whole nanoseconds, for APIs that count in them (swift-metrics' timers).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The seconds with their fraction, for APIs that count in them (SQL intervals, `Date`).
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
