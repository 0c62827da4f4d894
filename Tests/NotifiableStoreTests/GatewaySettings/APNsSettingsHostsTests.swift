import NotifiableCore
import NotifiableStore
import Testing

/// Which host each APNs environment reaches: the other environment's host only where the settings
/// can reach it, so a device's token is never sent to a host the operator did not name.
@Suite struct APNsSettingsHostsTests {
    static func settings(_ environment: APNsEnvironment, endpoint: String? = nil, sandbox: String? = nil) -> APNsSettings {
        APNsSettings(
            keyID: "K", teamID: "T", bundleID: "b", privateKeyPEM: "", environment: environment, endpoint: endpoint, sandboxEndpoint: sandbox)
    }

    @Test func applesHostsServeAnAppThatUsesApplesHost() {
        let production = Self.settings(.production)
        #expect(production.baseURL == "https://api.push.apple.com")
        #expect(production.otherBaseURL == "https://api.sandbox.push.apple.com")
        let sandbox = Self.settings(.sandbox)
        #expect(sandbox.baseURL == "https://api.sandbox.push.apple.com")
        #expect(sandbox.otherBaseURL == "https://api.push.apple.com")
    }

    @Test func aCustomEndpointReachesTheSandboxOnlyThroughTheSandboxEndpoint() {
        #expect(Self.settings(.production, endpoint: "https://proxy:2197").otherBaseURL == nil)
        #expect(Self.settings(.production, endpoint: "https://proxy:2197", sandbox: "https://proxy:2198").otherBaseURL == "https://proxy:2198")
        #expect(Self.settings(.production, sandbox: "https://proxy:2198").baseURL(for: .sandbox) == "https://proxy:2198")
        // An app in the sandbox: its own host is the endpoint (or the sandbox endpoint); Apple's
        // production host only when it uses Apple's sandbox host itself.
        #expect(Self.settings(.sandbox, endpoint: "https://proxy:2197").otherBaseURL == nil)
        #expect(Self.settings(.sandbox, sandbox: "https://proxy:2198").baseURL == "https://proxy:2198")
        #expect(Self.settings(.sandbox, sandbox: "https://proxy:2198").otherBaseURL == nil)
    }
}
