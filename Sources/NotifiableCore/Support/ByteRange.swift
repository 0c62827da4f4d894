import Foundation

/// A `Range: bytes=…` request header against content of a known size (RFC 9110 §14.1.2).
/// One range is served; several, or anything not in bytes, is answered with the whole content,
/// as the RFC allows.
public enum ByteRange: Equatable, Sendable {
    /// No usable range: send it all.
    case none
    /// The closed range of byte offsets to send.
    case range(ClosedRange<Int>)
    /// A well-formed range that lies outside the content: 416.
    case unsatisfiable

    public static func parse(_ header: String?, size: Int) -> ByteRange {
        guard let header, header.lowercased().hasPrefix("bytes=") else { return .none }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .none }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        func number(_ text: Substring) -> Int? { text.utf8.allSatisfy { (48...57).contains($0) } && text.count <= 18 ? Int(text) : nil }
        if first.isEmpty {
            // bytes=-n: the last n bytes.
            guard let count = number(last) else { return .none }
            guard count > 0, size > 0 else { return .unsatisfiable }
            return .range(max(0, size - count)...(size - 1))
        }
        guard let start = number(first) else { return .none }
        let end: Int
        if last.isEmpty {
            end = size - 1
        } else {
            guard let value = number(last), value >= start else { return .none }
            end = min(value, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .range(start...end)
    }
}
