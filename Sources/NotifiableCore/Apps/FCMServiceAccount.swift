import Crypto
import Foundation
import _CryptoExtras

/// Why a service-account JSON cannot be used, in words for the operator who uploaded it.
public struct FCMServiceAccountError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The key of the JSON at fault (`private_key`, `token_uri`, …); nil when it is the document itself.
    public let field: String?
    public let message: String

    public init(field: String?, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { message }
}

/// A Google service account as FCM's HTTP v1 API needs it: who signs (`client_email`, `private_key`,
/// `private_key_id`), where access tokens come from (`token_uri`) and which project messages go to
/// (`project_id`). Read from the JSON key file the Firebase console hands out (Project settings →
/// Service accounts → Generate new private key); other keys of the file are ignored.
///
/// Parsing is also how uploads are validated, so it throws a precise error for any input and never traps.
public struct FCMServiceAccount: Sendable {
    /// Where Google's key files send token requests.
    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"
    /// A key file is about 2.3 KB; anything far larger is not one, and is not worth parsing.
    public static let maximumSize = 64 * 1024

    public let projectID: String
    public let clientEmail: String
    /// The key's id, sent as the JWT `kid` so Google need not try every key of the account.
    public let privateKeyID: String?
    public let tokenURI: String
    public let privateKey: _RSA.Signing.PrivateKey

    public init(projectID: String, clientEmail: String, privateKeyID: String?, tokenURI: String, privateKey: _RSA.Signing.PrivateKey) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.tokenURI = tokenURI
        self.privateKey = privateKey
    }

    public init(json: String) throws(FCMServiceAccountError) {
        try self.init(json: Array(json.utf8))
    }

    public init(json bytes: some Collection<UInt8>) throws(FCMServiceAccountError) {
        guard bytes.count <= Self.maximumSize else {
            throw Self.documentError(
                "the service account JSON is \(bytes.count) bytes, more than a key file ever is (\(Self.maximumSize) at most)"
            )
        }
        guard let document = try? JSONValue.decode(Array(bytes)) else {
            throw Self.documentError("the service account is not valid JSON")
        }
        guard let object = document.objectValue else {
            throw Self.documentError("the service account must be a JSON object, not \(document.typeName)")
        }
        // A frequent mistake: the Android app's configuration file also names the project.
        if object["project_info"] != nil || object["client"] != nil {
            throw Self.documentError(
                "this is google-services.json, the Android app's configuration, not a service account key"
            )
        }
        let fields = Fields(object: object)
        if let type = try fields.string("type"), type != "service_account" {
            throw FCMServiceAccountError(
                field: "type",
                message: "the JSON is a \"\(type)\" credential, not a service account key: in the Firebase console, "
                    + "open Project settings → Service accounts and generate a new private key"
            )
        }
        self.projectID = try Self.projectID(fields)
        self.clientEmail = try Self.clientEmail(fields)
        self.privateKeyID = try fields.string("private_key_id")
        self.tokenURI = try Self.tokenURI(fields)
        self.privateKey = try Self.privateKey(fields)
    }

    private static func documentError(_ problem: String) -> FCMServiceAccountError {
        FCMServiceAccountError(
            field: nil,
            message: "\(problem): upload the JSON key file from the Firebase console (Project settings → Service accounts → "
                + "Generate new private key)"
        )
    }

    private static func missing(_ key: String) -> FCMServiceAccountError {
        FCMServiceAccountError(
            field: key,
            message: "the service account has no \(key): download a new key for the service account in the Firebase console"
        )
    }

    private static func projectID(_ fields: Fields) throws(FCMServiceAccountError) -> String {
        guard let projectID = try fields.string("project_id") else { throw missing("project_id") }
        // It becomes a path segment of the send URL. Besides lower-case ids, Google still has older
        // domain-scoped ids such as `example.com:project`.
        let allowed = projectID.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
        guard allowed, projectID.utf8.count <= 100 else {
            throw FCMServiceAccountError(
                field: "project_id",
                message: "project_id \"\(projectID.prefix(100))\" is not a Google Cloud project id: upload the key file unchanged"
            )
        }
        return projectID
    }

    private static func clientEmail(_ fields: Fields) throws(FCMServiceAccountError) -> String {
        guard let email = try fields.string("client_email") else { throw missing("client_email") }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
            email.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw FCMServiceAccountError(
                field: "client_email",
                message: "client_email \"\(email.prefix(100))\" is not a service account's email address: upload the key file unchanged"
            )
        }
        return email
    }

    private static func tokenURI(_ fields: Fields) throws(FCMServiceAccountError) -> String {
        guard let text = try fields.string("token_uri") else { return defaultTokenURI }
        guard let url = URL(string: text), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty else {
            throw FCMServiceAccountError(
                field: "token_uri",
                message: "token_uri \"\(text.prefix(200))\" is not an https URL; Google's key files use \(defaultTokenURI)"
            )
        }
        return text
    }

    private static func privateKey(_ fields: Fields) throws(FCMServiceAccountError) -> _RSA.Signing.PrivateKey {
        guard var pem = try fields.string("private_key") else { throw missing("private_key") }
        // Keys pasted through shells and environment variables often arrive with their line breaks
        // still escaped; the PEM inside is otherwise intact.
        if !pem.contains("\n") && pem.contains("\\n") {
            pem = pem.replacingOccurrences(of: "\\n", with: "\n")
        }
        pem = pem.trimmingCharacters(in: .whitespacesAndNewlines)
        func failure(_ problem: String) -> FCMServiceAccountError {
            FCMServiceAccountError(
                field: "private_key",
                message: "private_key \(problem): download a new key for the service account in the Firebase console"
            )
        }
        guard pem.hasPrefix("-----BEGIN"), pem.contains("PRIVATE KEY-----") else {
            throw failure("is not a PEM private key (-----BEGIN PRIVATE KEY-----)")
        }
        // Checked before parsing: an encrypted key would need a passphrase that key files never have.
        if pem.contains("ENCRYPTED") {
            throw failure("is encrypted; Google's key files hold an unencrypted key")
        }
        if let key = try? _RSA.Signing.PrivateKey(pemRepresentation: pem) { return key }
        if let weak = try? _RSA.Signing.PrivateKey(unsafePEMRepresentation: pem) {
            throw failure("is a \(weak.keySizeInBits)-bit RSA key; Google signs with 2048 bits or more")
        }
        if let curve = ellipticCurve(pem) {
            throw failure("is not an RSA private key (it is an EC \(curve) key); Google service accounts sign with RSA (RS256)")
        }
        if pem.contains("-----BEGIN RSA PRIVATE KEY-----") || pem.contains("-----BEGIN PRIVATE KEY-----") {
            throw failure("cannot be read as an RSA private key (damaged or truncated?)")
        }
        throw failure("is not an RSA private key")
    }

    private static func ellipticCurve(_ pem: String) -> String? {
        if (try? P256.Signing.PrivateKey(pemRepresentation: pem)) != nil { return "P-256" }
        if (try? P384.Signing.PrivateKey(pemRepresentation: pem)) != nil { return "P-384" }
        if (try? P521.Signing.PrivateKey(pemRepresentation: pem)) != nil { return "P-521" }
        return nil
    }
}

/// The string members of a service-account object.
private struct Fields {
    let object: [String: JSONValue]

    /// The member's text; nil when it is absent, null or blank.
    func string(_ key: String) throws(FCMServiceAccountError) -> String? {
        switch object[key] {
        case nil, .null?:
            return nil
        case .string(let text)?:
            return text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : text
        case let other?:
            throw FCMServiceAccountError(field: key, message: "\(key) must be a string, not \(other.typeName): upload the key file unchanged")
        }
    }
}
