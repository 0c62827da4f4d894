import Crypto
import Foundation

/// `X-Notifiable-Signature: t=<unix seconds>,sha256=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
///
/// The timestamp is signed with the body, so a receiver that refuses old timestamps refuses a
/// captured request replayed later; each attempt is signed afresh.
public enum WebhookSignature {
    public static let headerName = "X-Notifiable-Signature"

    public static func header(secret: String, timestamp: Int64, body: some Collection<UInt8>) -> String {
        "t=\(timestamp),sha256=\(hex(secret: secret, timestamp: timestamp, body: body))"
    }

    /// Whether `header` signs `body` with `secret` at a time within `tolerance` seconds of `now`.
    public static func verify(header: String, secret: String, body: some Collection<UInt8>, now: Int64, tolerance: Int64 = 300) -> Bool {
        var timestamp: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) }
            if pair[0] == "sha256" { signatures.append(pair[1].lowercased()) }
        }
        guard let timestamp, abs(now - timestamp) <= tolerance else { return false }
        let expected = Array(hex(secret: secret, timestamp: timestamp, body: body).utf8)
        // Constant time in the signature's bytes.
        return signatures.contains { given in
            let bytes = Array(given.utf8)
            guard bytes.count == expected.count else { return false }
            return zip(bytes, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }

    static func hex(secret: String, timestamp: Int64, body: some Collection<UInt8>) -> String {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Array(secret.utf8)))
        hmac.update(data: Array("\(timestamp).".utf8))
        hmac.update(data: Array(body))
        return hmac.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// A new signing secret: `whsec_` and 32 random bytes in hex.
    public static func generateSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return "whsec_" + (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
