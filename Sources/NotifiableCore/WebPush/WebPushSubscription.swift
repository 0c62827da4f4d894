import Crypto
import Foundation

/// What a browser's `PushSubscription.toJSON()` gives besides its endpoint (RFC 8291 §2 and the
/// Push API): the browser's P-256 public key, as an uncompressed point, and the 16-byte
/// authentication secret, both base64url.
public struct WebPushKeys: Sendable, Equatable, Codable {
    public let p256dh: String
    public let auth: String

    public init(p256dh: String, auth: String) {
        self.p256dh = p256dh
        self.auth = auth
    }

    /// The keys as bytes: a 65-byte point and a 16-byte secret.
    public var bytes: (publicKey: Data, authSecret: Data)? {
        guard let point = Self.decode(p256dh), let secret = Self.decode(auth) else { return nil }
        return (point, secret)
    }

    /// Base64url with or without padding: browsers send it without, some libraries with.
    static func decode(_ text: String) -> Data? {
        Base64URL.decode(Substring(text.trimmingCharacters(in: CharacterSet(charactersIn: "="))))
    }

    /// Reads `keys` as a registration sends it; the error names the field at fault.
    public static func read(_ value: JSONValue?, path: String) throws(ValidationError) -> WebPushKeys {
        guard let object = value?.objectValue else {
            throw ValidationError(
                code: "invalid_keys",
                message: "\(path) must be the subscription's keys, {\"p256dh\": …, \"auth\": …}, as PushSubscription.toJSON() gives them.",
                field: path
            )
        }
        guard case .string(let p256dh)? = object["p256dh"],
            let point = decode(p256dh), point.count == 65, point.first == 4,
            (try? P256.KeyAgreement.PublicKey(x963Representation: point)) != nil
        else {
            throw ValidationError(
                code: "invalid_keys",
                message: "\(path).p256dh must be the browser's P-256 public key, an uncompressed point (65 bytes) in base64url.",
                field: "\(path).p256dh"
            )
        }
        guard case .string(let auth)? = object["auth"], let secret = decode(auth), secret.count == 16 else {
            throw ValidationError(
                code: "invalid_keys",
                message: "\(path).auth must be the subscription's authentication secret, 16 bytes in base64url.",
                field: "\(path).auth"
            )
        }
        return WebPushKeys(p256dh: Base64URL.encode(point), auth: Base64URL.encode(secret))
    }
}

/// A Web Push device's token is its subscription's endpoint: an HTTPS URL on a known push service.
public enum WebPushEndpoint {
    public static let maxLength = 2048

    /// The endpoint as stored, or a validation error naming `field`.
    public static func normalized(_ text: String, hosts: WebPushHosts, field: String) throws(ValidationError) -> String {
        guard text.utf8.count <= maxLength, text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }),
            let url = URLComponents(string: text), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty,
            url.user == nil, url.password == nil
        else {
            throw ValidationError(
                code: "invalid_token",
                message: "A Web Push token must be the subscription's endpoint, an https URL of at most \(maxLength) characters.",
                field: field
            )
        }
        guard hosts.allows(host: host) else {
            throw ValidationError(
                code: "push_service_not_allowed",
                message: "\(host) is not a browser push service this server sends to; the allowed hosts are "
                    + "\(hosts.patterns.joined(separator: ", ")) (NOTIFIABLE_WEBPUSH_ALLOWED_HOSTS).",
                field: field
            )
        }
        return text
    }
}
