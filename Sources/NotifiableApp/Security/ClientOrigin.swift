import HTTPTypes
import Hummingbird
import NotifiableCore

/// Who sent a request and over what: the peer's address, or, when the peer is a proxy the
/// operator named (`NOTIFIABLE_TRUSTED_PROXIES`), the address and scheme it reports in
/// `X-Forwarded-For` and `X-Forwarded-Proto`. Anyone else's forwarding headers are ignored:
/// they could claim any address or scheme.
struct ClientOrigin: Sendable, Equatable {
    /// The client's address as best known; "unknown" when the peer has none (tests in router mode).
    let address: String
    /// Whether the client reached the service over HTTPS (through a trusted proxy; the service
    /// itself speaks plain HTTP).
    let isHTTPS: Bool

    static func of(_ request: Request, context: NotifiableRequestContext, trustedProxies: Set<String>) -> ClientOrigin {
        of(peer: context.remoteAddress, headers: request.headers, trustedProxies: trustedProxies)
    }

    static func of(peer: String?, headers: HTTPFields, trustedProxies: Set<String>) -> ClientOrigin {
        let peer = peer ?? "unknown"
        // Compared as addresses, not text: on a dual-stack socket a proxy at 10.0.0.2 is ::ffff:10.0.0.2.
        guard let proxy = NetworkAddress.canonical(peer), trustedProxies.contains(proxy) else {
            return ClientOrigin(address: peer, isHTTPS: false)
        }
        // The last hop is the one the trusted proxy itself saw.
        let forwarded = headers[.xForwardedFor]?.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
        let scheme = headers[.xForwardedProto]?.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        return ClientOrigin(address: forwarded.flatMap { $0.isEmpty ? nil : $0 } ?? peer, isHTTPS: scheme == "https")
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
    static let xForwardedProto = Self("X-Forwarded-Proto")!
}
