import Foundation
import NotifiableCore
import _CryptoExtras

/// A Google service account key file (the JSON the Firebase console downloads), made for the fake FCM gateway.
struct SandboxFCMServiceAccount {
    var projectID: String
    var clientEmail: String
    var privateKey: _RSA.Signing.PrivateKey
    var privateKeyID: String
    var clientID: String
    var tokenURI: String

    /// The RSA-2048 key of every account made in this process. Generating one costs up to seconds
    /// of CPU (enough to starve everything else on a small machine when tests make many), and the
    /// gateway tells accounts apart by client email, not by key.
    private static let sharedKey = Result { try _RSA.Signing.PrivateKey(keySize: .bits2048) }

    /// A new account; `clientEmail` defaults to a new `firebase-adminsdk-xxxxx@{project}.iam.gserviceaccount.com`.
    static func make(projectID: String, clientEmail: String?, tokenURI: String) throws -> SandboxFCMServiceAccount {
        var generator = SystemRandomNumberGenerator()
        let suffix = String((0..<5).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement(using: &generator)! })
        let email = clientEmail ?? "firebase-adminsdk-\(suffix)@\(projectID).iam.gserviceaccount.com"
        let keyID = (0..<20).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        let clientID = "1" + (0..<20).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined()
        return SandboxFCMServiceAccount(
            projectID: projectID, clientEmail: email, privateKey: try sharedKey.get(),
            privateKeyID: keyID, clientID: clientID, tokenURI: tokenURI
        )
    }

    /// The key file as Google writes it: members in Google's order, two-space indentation, the PKCS#8 private key
    /// with its line breaks as `\n`.
    var json: String {
        let pathCharacters = CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "@"))
        let certificateURL =
            "https://www.googleapis.com/robot/v1/metadata/x509/"
            + (clientEmail.addingPercentEncoding(withAllowedCharacters: pathCharacters) ?? clientEmail)
        let privateKeyPEM =
            privateKey.pkcs8PEMRepresentation.hasSuffix("\n")
            ? privateKey.pkcs8PEMRepresentation : privateKey.pkcs8PEMRepresentation + "\n"
        let members: [(String, String)] = [
            ("type", "service_account"),
            ("project_id", projectID),
            ("private_key_id", privateKeyID),
            ("private_key", privateKeyPEM),
            ("client_email", clientEmail),
            ("client_id", clientID),
            ("auth_uri", "https://accounts.google.com/o/oauth2/auth"),
            ("token_uri", tokenURI),
            ("auth_provider_x509_cert_url", "https://www.googleapis.com/oauth2/v1/certs"),
            ("client_x509_cert_url", certificateURL),
            ("universe_domain", "googleapis.com"),
        ]
        let lines = members.map { "  \(JSONText.quoted($0.0)): \(JSONText.quoted($0.1))" }
        return "{\n" + lines.joined(separator: ",\n") + "\n}\n"
    }

    /// The fields of a key file the gateway needs to trust it.
    struct Parsed: Sendable {
        var projectID: String
        var clientEmail: String
        var publicKey: _RSA.Signing.PublicKey
    }

    /// Reads a service account key file: `project_id`, `client_email` and the public half of `private_key`.
    static func parse(json: String) throws -> Parsed {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else {
            throw SandboxGatewayError("The service account file is not a JSON object.")
        }
        guard object["type"] as? String == "service_account" else {
            throw SandboxGatewayError("The service account file's type is not \"service_account\".")
        }
        guard let projectID = object["project_id"] as? String, !projectID.isEmpty,
            let clientEmail = object["client_email"] as? String, !clientEmail.isEmpty,
            let privateKeyPEM = object["private_key"] as? String
        else {
            throw SandboxGatewayError("The service account file lacks project_id, client_email or private_key.")
        }
        let privateKey: _RSA.Signing.PrivateKey
        do {
            privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        } catch {
            throw SandboxGatewayError("The service account's private_key is not an RSA private key of 2048 bits or more in PEM.")
        }
        return Parsed(projectID: projectID, clientEmail: clientEmail, publicKey: privateKey.publicKey)
    }
}
