import HTTPTypes
import NotifiableCore
import Testing

@testable import NotifiableApp

/// Whose address a request is counted under: the peer's, or the last hop a trusted proxy reports,
/// with the proxy recognised however its address is written.
@Suite struct ClientOriginTests {
    static let forwarded: HTTPFields = [.xForwardedFor: "203.0.113.9, 198.51.100.7", .xForwardedProto: "https"]

    @Test(arguments: ["10.0.0.2", "::ffff:10.0.0.2", "::FFFF:10.0.0.2"])
    func aTrustedProxyIsKnownHoweverItsAddressIsWritten(peer: String) {
        let origin = ClientOrigin.of(peer: peer, headers: Self.forwarded, trustedProxies: ["10.0.0.2"])
        #expect(origin == ClientOrigin(address: "198.51.100.7", isHTTPS: true))
    }

    @Test func anIPv6ProxyIsKnownInAnyOfItsSpellings() {
        let trusted: Set<String> = [NetworkAddress.canonical("2001:db8:0:0:0:0:0:1") ?? ""]
        let origin = ClientOrigin.of(peer: "2001:db8::1", headers: Self.forwarded, trustedProxies: trusted)
        #expect(origin.address == "198.51.100.7")
    }

    @Test func anyoneElsesForwardingHeadersAreIgnored() {
        let origin = ClientOrigin.of(peer: "10.0.0.3", headers: Self.forwarded, trustedProxies: ["10.0.0.2"])
        #expect(origin == ClientOrigin(address: "10.0.0.3", isHTTPS: false))
        #expect(ClientOrigin.of(peer: nil, headers: Self.forwarded, trustedProxies: ["10.0.0.2"]).address == "unknown")
    }
}
