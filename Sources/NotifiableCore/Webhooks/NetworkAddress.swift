import Foundation

/// What kind of network an IP address belongs to, for refusing webhook targets inside the
/// operator's own network (an app's webhook must not become a way to reach the service's
/// neighbours: cloud metadata at 169.254.169.254, a database on 10.0.0.5, the service itself).
public enum NetworkAddress {
    /// Whether `address` (IPv4 dotted or IPv6 text) is loopback, link-local, private, shared
    /// (carrier-grade NAT), unspecified, multicast or broadcast; nil when it is not an address.
    public static func isInternal(_ address: String) -> Bool? {
        if let v4 = ipv4(address) { return isInternal(v4: v4) }
        guard let v6 = ipv6(address) else { return nil }
        // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible forms are IPv4 addresses.
        if v6[0..<10].allSatisfy({ $0 == 0 }), v6[10] == 0xFF, v6[11] == 0xFF {
            return isInternal(v4: Array(v6[12..<16]))
        }
        if v6[0..<15].allSatisfy({ $0 == 0 }) { return true }  // :: and ::1
        if v6[0] == 0xFE, v6[1] & 0xC0 == 0x80 { return true }  // fe80::/10 link-local
        if v6[0] & 0xFE == 0xFC { return true }  // fc00::/7 unique local
        if v6[0] == 0xFF { return true }  // multicast
        return false
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

    static func ipv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    static func ipv6(_ text: String) -> [UInt8]? {
        var text = Substring(text)
        if let zone = text.firstIndex(of: "%") { text = text[..<zone] }  // fe80::1%eth0
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt8]? {
            guard !part.isEmpty else { return [] }
            var bytes: [UInt8] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, piece.contains("."), let v4 = ipv4(String(piece)) { bytes += v4; continue }
                guard (1...4).contains(piece.count), let value = UInt16(piece, radix: 16) else { return nil }
                bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
            return bytes
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count < 16 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}
