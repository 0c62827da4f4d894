import Foundation
import _CryptoExtras

/// A Firebase service account with a fresh RSA key, in the JSON form Google issues.
public struct FCMTestAccount: Sendable {
    public let projectID: String
    public let clientEmail: String
    public let privateKeyPEM: String
    public let privateKeyDER: Data
    public let json: String

    public init(projectID: String = "demo-project", tokenURI: String = "https://oauth2.googleapis.com/token") throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        self.projectID = projectID
        clientEmail = "notifiable@\(projectID).iam.gserviceaccount.com"
        privateKeyPEM = key.pemRepresentation
        privateKeyDER = key.derRepresentation
        let object: [String: String] = [
            "type": "service_account", "project_id": projectID, "private_key_id": "0123456789abcdef",
            "private_key": privateKeyPEM, "client_email": clientEmail, "client_id": "1234567890",
            "token_uri": tokenURI,
        ]
        json = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }
}
