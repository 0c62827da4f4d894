import Foundation
import NIOPosix
import NotifiableCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where webhooks may be sent. With `refusesInternalAddresses` (NOTIFIABLE_WEBHOOK_PUBLIC_TARGETS_ONLY),
/// a URL whose host is, or resolves to, a loopback, link-local, private or otherwise internal
/// address (`NetworkAddress.isInternal`) is refused when the webhook is made and again before
/// every POST, so a name that later resolves inside the network is caught too. A name that
/// resolves between that check and the connection (DNS rebinding) is not: where that matters,
/// also block those ranges for the worker at the network's edge.
public struct WebhookTargets: Sendable {
    public let refusesInternalAddresses: Bool

    public init(refusesInternalAddresses: Bool) {
        self.refusesInternalAddresses = refusesInternalAddresses
    }

    /// Why `url` may not be a webhook target; nil when it may. The host is always resolved as the
    /// connection will resolve it (getaddrinfo, which reads `012.0.0.1` as octal and `2130706433`
    /// as 127.0.0.1 without asking DNS), and every address it comes to is classified by its bytes.
    public func refusal(of url: String) async -> String? {
        guard refusesInternalAddresses else { return nil }
        guard let host = URLComponents(string: url)?.host, !host.isEmpty else { return "the URL has no host" }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let addresses = await Self.resolve(bare)
        guard !addresses.isEmpty else { return "\(host) does not resolve to any address" }
        if let inside = addresses.first(where: NetworkAddress.isInternal(bytes:)) {
            let text = NetworkAddress.text(inside)
            return "\(host) is \(text == bare ? "" : "at ")\(text), an internal address, and this server sends webhooks to public addresses only"
        }
        return nil
    }

    /// The addresses (their bytes) a host resolves to, looked up on NIO's blocking-work pool
    /// (getaddrinfo blocks).
    static func resolve(_ host: String) async -> [[UInt8]] {
        (try? await NIOThreadPool.singleton.runIfActive { addresses(of: host) }) ?? []
    }

    private static func addresses(of host: String) -> [[UInt8]] {
        var hints = addrinfo()
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [[UInt8]] = []
        var entry = list
        while let info = entry, let address = info.pointee.ai_addr {
            switch Int32(info.pointee.ai_family) {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    addresses.append(withUnsafeBytes(of: v4.pointee.sin_addr) { Array($0) })
                }
            case AF_INET6:
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                    addresses.append(withUnsafeBytes(of: v6.pointee.sin6_addr) { Array($0) })
                }
            default:
                break
            }
            entry = info.pointee.ai_next
        }
        return addresses
    }
}
