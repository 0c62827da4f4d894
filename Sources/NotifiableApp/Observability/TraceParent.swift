import Foundation
import HTTPTypes

/// A W3C Trace Context `traceparent` header (`00-<32 hex trace id>-<16 hex parent id>-<2 hex
/// flags>`, W3C Trace Context Level 1 §3.2), read so that the service's log lines can be joined
/// with the caller's trace. A header that is not well formed, or carries the all-zero ids the
/// standard forbids, is ignored; a later version's extra fields are, as the standard asks.
struct TraceParent: Equatable {
    let traceID: String
    let parentID: String

    init(traceID: String, parentID: String) {
        self.traceID = traceID
        self.parentID = parentID
    }

    init?(_ header: String?) {
        guard let header else { return nil }
        let parts = header.trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 2, parts[0] != "ff", parts[1].count == 32, parts[2].count == 16, parts[3].count == 2,
            parts[0...3].allSatisfy({ $0.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) } }),
            parts[0] == "00" ? parts.count == 4 : true,
            parts[1].contains(where: { $0 != "0" }), parts[2].contains(where: { $0 != "0" })
        else { return nil }
        traceID = String(parts[1])
        parentID = String(parts[2])
    }
}

extension HTTPField.Name {
    static let traceparent = Self("traceparent")!
}
