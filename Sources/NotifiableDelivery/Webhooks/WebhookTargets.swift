#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NotifiableCore

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

    /// Why `url` may not be a webhook target; nil when it may.
    public func refusal(of url: String) async -> String? {
        guard refusesInternalAddresses else { return nil }
        guard let host = URLComponents(string: url)?.host, !host.isEmpty else { return "the URL has no host" }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let addresses = NetworkAddress.isInternal(bare) != nil ? [bare] : await Self.resolve(bare)
        guard !addresses.isEmpty else { return "\(host) does not resolve to any address" }
        if let inside = addresses.first(where: { NetworkAddress.isInternal($0) ?? true }) {
            return "\(host) is \(inside == bare ? "" : "at ")\(inside), an internal address, and this server sends webhooks to public addresses only"
        }
        return nil
    }

    /// The addresses a name resolves to, looked up on a thread of its own (getaddrinfo blocks).
    static func resolve(_ host: String) async -> [String] {
        await withCheckedContinuation { continuation in
            Thread {
                var hints = addrinfo()
                #if canImport(Glibc)
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
                #else
                hints.ai_socktype = SOCK_STREAM
                #endif
                var list: UnsafeMutablePointer<addrinfo>?
                guard getaddrinfo(host, nil, &hints, &list) == 0 else { return continuation.resume(returning: []) }
                defer { freeaddrinfo(list) }
                var addresses: [String] = []
                var entry = list
                while let info = entry {
                    var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                    if getnameinfo(info.pointee.ai_addr, info.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 {
                        addresses.append(String(cString: buffer))
                    }
                    entry = info.pointee.ai_next
                }
                continuation.resume(returning: addresses)
            }.start()
        }
    }
}
