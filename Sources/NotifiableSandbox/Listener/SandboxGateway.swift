/// What the sandbox's APNs and FCM gateways both offer a process that runs one: where it listens,
/// its certificate, the fault and observation knobs, and stopping.
public protocol SandboxGateway: AnyObject, Sendable {
    /// `https://HOST:PORT`.
    var baseURL: String { get }
    /// The self-signed certificate (PEM) clients must trust.
    var certificatePEM: String { get }
    var stats: SandboxGatewayStats { get }
    func drainRequestLog() -> [SandboxGatewayRequestRecord]
    func setFaults(_ mix: SandboxGatewayFaultMix?)
    func setObserving(statistics: Bool, requestLog: Bool)
    func setLatency(_ duration: Duration)
    func setRecording(_ enabled: Bool)
    func stop() async throws
}

extension SandboxAPNsGateway: SandboxGateway {}
extension SandboxFCMGateway: SandboxGateway {}
extension SandboxWebPushGateway: SandboxGateway {}
