import Foundation
import Synchronization
import _CryptoExtras

/// The fake FCM gateway's state and Google's rules, shared by every connection and guarded by one mutex held only
/// briefly (never while verifying a signature or parsing a body).
final class SandboxFCMRules: FaultInjectingRules, SandboxHTTPRules {
    let gatewayName = "fake FCM"

    static let defaultAccessTokenLifetimeSeconds = 3599
    /// Issued access tokens kept at most; past this, expired ones are swept out.
    static let sweepAccessTokensAbove = 1024

    struct RandomFailures {
        var rate: Double
        var generator: SplitMix64
        var outcome: SandboxFCMOutcome
    }

    /// An access token the token endpoint issued.
    struct AccessToken {
        var clientEmail: String
        var projectID: String
        var expiresAt: Date
    }

    struct State: FaultInjectionState {
        /// The token endpoint's URL, which assertions must name as `aud`; set once the port is known.
        var tokenURI = ""
        /// Trusted service accounts by `client_email`.
        var accounts: [String: TrustedServiceAccount] = [:]
        var accessTokens: [String: AccessToken] = [:]
        var accessTokenLifetimeSeconds = SandboxFCMRules.defaultAccessTokenLifetimeSeconds
        /// Per registration token, outcomes still to use, last one first.
        var scripts: [String: [SandboxFCMOutcome]] = [:]
        var randomFailures: RandomFailures?
        var faults: SandboxGatewayFaultMix?
        var tally = SandboxGatewayTally()
        var latency: Duration = .zero
        var tokenLatency: Duration = .zero
        var recording = true
        var accepted: [AcceptedFCMMessage] = []
        var acceptedCount = 0
        var sendRequestCount = 0
        var tokenRequestCount = 0
        var tokensIssued = 0
    }

    let state = Mutex(State())

    func withState<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
        state.withLock { body(&$0) }
    }

    // MARK: Configuration

    func setTokenURI(_ uri: String) {
        state.withLock { $0.tokenURI = uri }
    }

    /// Trusts `publicKey` for `clientEmail`; another key for the same account and project is added (as after a key
    /// rotation), a different project replaces the account.
    func trust(clientEmail: String, projectID: String, publicKey: _RSA.Signing.PublicKey) {
        state.withLock { state in
            if var account = state.accounts[clientEmail], account.projectID == projectID {
                account.publicKeys.append(publicKey)
                state.accounts[clientEmail] = account
            } else {
                state.accounts[clientEmail] = TrustedServiceAccount(projectID: projectID, publicKeys: [publicKey])
            }
        }
    }

    func script(token: String, _ outcomes: [SandboxFCMOutcome]) {
        state.withLock { $0.scripts[token] = outcomes.isEmpty ? nil : outcomes.reversed() }
    }

    func setRandomFailures(rate: Double, seed: UInt64, outcome: SandboxFCMOutcome) {
        state.withLock {
            $0.randomFailures =
                rate > 0 ? RandomFailures(rate: min(rate, 1), generator: SplitMix64(seed: seed), outcome: outcome) : nil
        }
    }

    func setTokenLatency(_ duration: Duration) {
        state.withLock { $0.tokenLatency = max(duration, .zero) }
    }

    func setAccessTokenLifetime(seconds: Int) {
        state.withLock { $0.accessTokenLifetimeSeconds = max(seconds, 0) }
    }

    func expireAccessTokens() {
        state.withLock { $0.accessTokens.removeAll() }
    }

    func setRecording(_ enabled: Bool) {
        state.withLock { $0.recording = enabled }
    }

    /// Forgets what happened and the per-test behaviour (scripts, random failures, latencies, token lifetime);
    /// keeps the trusted accounts, the access tokens already issued and the recording setting.
    func reset() {
        state.withLock {
            $0.scripts.removeAll()
            $0.randomFailures = nil
            $0.faults = nil
            $0.tally.reset()
            $0.latency = .zero
            $0.tokenLatency = .zero
            $0.accessTokenLifetimeSeconds = Self.defaultAccessTokenLifetimeSeconds
            $0.accepted.removeAll()
            $0.acceptedCount = 0
            $0.sendRequestCount = 0
            $0.tokenRequestCount = 0
            $0.tokensIssued = 0
        }
    }

    // MARK: Deciding

    func decide(_ request: SandboxHTTPRequest) -> SandboxHTTPDecision {
        decide(request, now: Date())
    }

    func decide(_ request: SandboxHTTPRequest, now: Date) -> SandboxHTTPDecision {
        if request.path == "/token" { return decideToken(request, now: now) }
        guard let projectID = Self.sendPathProject(request.path) else {
            let latency = state.withLock { $0.latency }
            let body = GoogleErrorBody.apiError(code: 404, message: "Requested entity was not found.", status: "NOT_FOUND")
            return .answer(SandboxHTTPReply(status: 404, body: body), after: latency)
        }
        return decideSend(request, projectID: projectID, now: now)
    }

    /// The project of `/v1/projects/{project}/messages:send`, or nil for any other path.
    static func sendPathProject(_ path: String) -> String? {
        let prefix = "/v1/projects/"
        let suffix = "/messages:send"
        guard path.hasPrefix(prefix), path.hasSuffix(suffix), path.utf8.count > prefix.utf8.count + suffix.utf8.count
        else { return nil }
        let project = path.dropFirst(prefix.utf8.count).dropLast(suffix.utf8.count)
        guard !project.contains("/") else { return nil }
        return String(project)
    }
}
