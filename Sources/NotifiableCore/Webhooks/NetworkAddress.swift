import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What kind of network an IP address belongs to, for refusing webhook targets inside the
/// operator's own network (an app's webhook must not become a way to reach the service's
/// neighbours: cloud metadata at 169.254.169.254, a database on 10.0.0.5, the service itself),
/// and for comparing addresses written differently.
public enum NetworkAddress {
    /// Whether `address` (IPv4 dotted quad or IPv6 text, strictly as `inet_pton` reads them) is
    /// internal; nil when it is not an address. Other spellings the C library accepts (`012.0.0.1`,
    /// `0x7f.1`, `2130706433`) are not addresses here: resolve them (`WebhookTargets`) and classify
    /// the bytes.
    public static func isInternal(_ address: String) -> Bool? {
        bytes(of: address).map(isInternal(bytes:))
    }

    /// Whether the address (4 or 16 bytes, network order) is loopback, link-local, private, shared
    /// (carrier-grade NAT), unspecified, multicast or broadcast.
    public static func isInternal(bytes address: [UInt8]) -> Bool {
        if address.count == 4 { return isInternal(v4: address) }
        if let v4 = mappedIPv4(address) { return isInternal(v4: v4) }
        if address[0..<15].allSatisfy({ $0 == 0 }) { return true }  // :: and ::1
        if address[0] == 0xFE, address[1] & 0xC0 == 0x80 { return true }  // fe80::/10 link-local
        if address[0] & 0xFE == 0xFC { return true }  // fc00::/7 unique local
        if address[0] == 0xFF { return true }  // multicast
        return false
    }

    /// The address's bytes (4 for IPv4, 16 for IPv6; a zone such as `%eth0` ignored); nil when the
    /// text is not an address.
    public static func bytes(of text: String) -> [UInt8]? {
        let address = text.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? text
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, address, &v4) == 1 { return v4 }
        var v6 = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET6, address, &v6) == 1 { return v6 }
        return nil
    }

    /// One spelling per address: IPv4-mapped IPv6 (`::ffff:10.0.0.2`, what a peer looks like on a
    /// dual-stack socket) as IPv4, IPv6 in `inet_ntop`'s form; nil when the text is not an address.
    public static func canonical(_ text: String) -> String? {
        guard var address = bytes(of: text) else { return nil }
        if let v4 = mappedIPv4(address) { address = v4 }
        return self.text(address)
    }

    /// The text of an address's bytes.
    public static func text(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = inet_ntop(address.count == 4 ? AF_INET : AF_INET6, address, &buffer, socklen_t(buffer.count))
        return String(cString: buffer)
    }

    /// The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
    static func mappedIPv4(_ address: [UInt8]) -> [UInt8]? {
        guard address.count == 16, address[0..<10].allSatisfy({ $0 == 0 }), address[10] == 0xFF, address[11] == 0xFF else { return nil }
        return Array(address[12..<16])
    }

    static func isInternal(v4 b: [UInt8]) -> Bool {
        switch (b[0], b[1]) {
        case (0, _), (10, _), (127, _): true
        case (100, let second) where second & 0xC0 == 64: true  // 100.64.0.0/10
        case (169, 254), (192, 168): true
        case (172, let second) where second & 0xF0 == 16: true  // 172.16.0.0/12
        case (let first, _) where first >= 224: true  // multicast, reserved, broadcast
        default: false
        }
    }
}
