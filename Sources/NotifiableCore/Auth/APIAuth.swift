import Crypto
import Foundation

/// The Notifiable SDKs' request signing scheme ("APIAuth", from the api-auth Ruby gem):
/// `Authorization: APIAuth <access_id>:<base64 HMAC-SHA1 of the canonical string>`, or the
/// `APIAuth-HMAC-SHA256` form with the same canonical string.
public enum APIAuth {
    public enum Algorithm: String, Sendable {
        case hmacSHA1 = "APIAuth"
        case hmacSHA256 = "APIAuth-HMAC-SHA256"
    }

    /// How far a request's `Date` may be from the server clock, either way.
    public static let allowedClockSkewSeconds: Int64 = 15 * 60

    /// The parsed `Authorization` header.
    public struct Authorization: Sendable, Equatable {
        public let algorithm: Algorithm
        public let accessID: String
        public let signature: String

        public init(algorithm: Algorithm, accessID: String, signature: String) {
            self.algorithm = algorithm
            self.accessID = accessID
            self.signature = signature
        }

        /// Reads `APIAuth id:sig` or `APIAuth-HMAC-SHA256 id:sig`; nil for anything else.
        public init?(header: String) {
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let algorithm = Algorithm(rawValue: String(parts[0])) else { return nil }
            let credentials = parts[1].trimmingCharacters(in: .whitespaces)
            // The access id never contains ':'; the base64 signature never does either.
            guard let colon = credentials.lastIndex(of: ":") else { return nil }
            let accessID = String(credentials[..<colon])
            let signature = String(credentials[credentials.index(after: colon)...])
            guard !accessID.isEmpty, !signature.isEmpty else { return nil }
            self.init(algorithm: algorithm, accessID: accessID, signature: signature)
        }

        public var headerValue: String { "\(algorithm.rawValue) \(accessID):\(signature)" }
    }

    /// What a client puts in the signature to cover the body (docs/compatibility.md §7): the
    /// api_auth gem since 2.5 sends `X-Authorization-Content-SHA256`, earlier versions
    /// `Content-MD5`; either stands in the canonical string's third place. The Notifiable SDKs
    /// send neither, and that place is empty.
    public enum BodyHash: Sendable, CaseIterable {
        case sha256
        case md5

        public var headerName: String {
            switch self {
            case .sha256: "X-Authorization-Content-SHA256"
            case .md5: "Content-MD5"
            }
        }

        /// base64 of the body's digest, as the header carries it.
        public func value(of body: some DataProtocol) -> String {
            switch self {
            case .sha256: Data(SHA256.hash(data: body)).base64EncodedString()
            case .md5: Data(Insecure.MD5.hash(data: body)).base64EncodedString()
            }
        }
    }

    /// Methods whose body a server credential must cover (CONTRACT §6).
    public static let methodsWithBody: Set<String> = ["POST", "PUT", "PATCH"]

    /// `METHOD,content-type,content-hash,request-URI,date`, the content hash being either body
    /// hash header's value or empty.
    public static func canonicalString(
        method: String, contentType: String, contentHash: String, requestURI: String, date: String
    ) -> String {
        [method.uppercased(), contentType, contentHash, requestURI, date].joined(separator: ",")
    }

    public static func signature(of canonical: String, secretKey: String, algorithm: Algorithm) -> String {
        let key = SymmetricKey(data: Data(secretKey.utf8))
        let message = Data(canonical.utf8)
        switch algorithm {
        case .hmacSHA1:
            return Data(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: key)).base64EncodedString()
        case .hmacSHA256:
            return Data(HMAC<SHA256>.authenticationCode(for: message, using: key)).base64EncodedString()
        }
    }

    /// Compares two signatures in time that depends only on their lengths.
    public static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<x.count { difference |= x[i] ^ y[i] }
        return difference == 0
    }

    /// The headers a client sends for a signed request at `date` (seconds since 1970), the body
    /// covered by `bodyHash` when given.
    public static func signedHeaders(
        method: String, path: String, body: some DataProtocol, accessID: String, secretKey: String,
        date: Int64, algorithm: Algorithm = .hmacSHA1, bodyHash: BodyHash? = nil,
        contentType: String = "application/json; charset=utf-8"
    ) -> [(name: String, value: String)] {
        let dateText = HTTPDate.format(date)
        let hash = bodyHash?.value(of: body) ?? ""
        let canonical = canonicalString(method: method, contentType: contentType, contentHash: hash, requestURI: path, date: dateText)
        let authorization = Authorization(
            algorithm: algorithm, accessID: accessID,
            signature: signature(of: canonical, secretKey: secretKey, algorithm: algorithm)
        )
        var headers = [("Date", dateText), ("Content-Type", contentType), ("Authorization", authorization.headerValue)]
        if let bodyHash { headers.append((bodyHash.headerName, hash)) }
        return headers.map { (name: $0.0, value: $0.1) }
    }
}
