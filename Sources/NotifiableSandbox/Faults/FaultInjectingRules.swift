import Synchronization

/// What both fake gateways' rules keep for fault injection and observation.
protocol FaultInjectionState {
    var faults: SandboxGatewayFaultMix? { get set }
    var tally: SandboxGatewayTally { get set }
    var latency: Duration { get set }
}

/// A fake gateway's rules: the fault and observation knobs are the same for APNs and FCM, so
/// they are written once here over each gateway's own state.
protocol FaultInjectingRules: Sendable {
    associatedtype State: FaultInjectionState
    func withState<Result: Sendable>(_ body: (inout State) -> Result) -> Result
}

extension FaultInjectingRules {
    func setFaults(_ mix: SandboxGatewayFaultMix?) {
        withState { $0.faults = mix }
    }

    func setObserving(statistics: Bool, requestLog: Bool) {
        withState {
            $0.tally.observing = statistics
            $0.tally.logging = requestLog
        }
    }

    func setLatency(_ duration: Duration) {
        withState { $0.latency = max(duration, .zero) }
    }

    var stats: SandboxGatewayStats {
        withState { $0.tally.stats() }
    }

    func drainRequestLog() -> [SandboxGatewayRequestRecord] {
        withState { $0.tally.drainLog() }
    }
}
