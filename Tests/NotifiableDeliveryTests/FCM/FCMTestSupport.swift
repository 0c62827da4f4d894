import Foundation
import NotifiableCore
import Synchronization
import _CryptoExtras

@testable import NotifiableDelivery
@testable import NotifiableStore

/// A service account for tests, with one RSA key made per process.
enum FCMTestAccount {
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let projectID = "notifiable-test"
    static let clientEmail = "sender@notifiable-test.iam.gserviceaccount.com"
    static let keyID = "f0e1d2c3b4a5f0e1d2c3b4a5f0e1d2c3b4a5f0e1"

    static func json(tokenURI: String = "https://oauth2.example.test/token", keyID: String? = keyID) -> String {
        var object: [String: JSONValue] = [
            "type": .string("service_account"), "project_id": .string(projectID), "client_email": .string(clientEmail),
            "private_key": .string(key.pkcs8PEMRepresentation), "token_uri": .string(tokenURI),
        ]
        if let keyID { object["private_key_id"] = .string(keyID) }
        return JSONValue.object(object).jsonText()
    }

    static func account(tokenURI: String = "https://oauth2.example.test/token", keyID: String? = keyID) -> FCMServiceAccount {
        try! FCMServiceAccount(json: json(tokenURI: tokenURI, keyID: keyID))
    }

    static func settings(endpoint: String = "https://fcm.example.test") -> FCMSettings {
        FCMSettings(serviceAccountJSON: json(), projectID: projectID, clientEmail: clientEmail, endpoint: endpoint)
    }
}

/// A delivery to an Android device.
func fcmDelivery(
    id: Int64 = 1, appID: Int64 = 1, token: String = "android-token-1",
    content: NotificationContent = NotificationContent(
        text: LocalizedText(title: "Hello", message: "World")
    )
) -> ClaimedDelivery {
    ClaimedDelivery(
        id: id, notificationID: 100 + id, appID: appID, deviceID: id, attempt: 1, provider: .fcm, token: token,
        language: nil, country: nil, content: content, expiresAt: nil
    )
}

/// A request an `GatewayTransport` was asked to carry.
struct FCMRecordedRequest: Sendable {
    var url: String
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name }?.1
    }

    var json: [String: JSONValue] { (try? JSONValue.decode(body))?.objectValue ?? [:] }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// An `GatewayTransport` that answers with a closure and records what it was asked.
final class ScriptedFCMTransport: GatewayTransport {
    private let answer: @Sendable (FCMRecordedRequest) async throws -> GatewayResponse
    private let recorded = Mutex<[FCMRecordedRequest]>([])
    private let shutDown = Mutex(false)

    init(_ answer: @escaping @Sendable (FCMRecordedRequest) async throws -> GatewayResponse) {
        self.answer = answer
    }

    var requests: [FCMRecordedRequest] { recorded.withLock { $0 } }
    var isShutDown: Bool { shutDown.withLock { $0 } }

    func requests(to suffix: String) -> [FCMRecordedRequest] {
        requests.filter { $0.url.hasSuffix(suffix) }
    }

    func post(_ url: String, headers: [(String, String)], body: [UInt8], deadline: Duration) async throws -> GatewayResponse {
        let request = FCMRecordedRequest(url: url, headers: headers, body: body)
        recorded.withLock { $0.append(request) }
        return try await answer(request)
    }

    func shutdown() async {
        shutDown.withLock { $0 = true }
    }
}

/// A thread-safe counter.
final class Counter: Sendable {
    private let value = Mutex(0)

    @discardableResult
    func next() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }
    var count: Int { value.withLock { $0 } }
}

extension GatewayResponse {
    /// A Google API error body with an FCM error code.
    static func fcmError(
        _ status: Int, _ googleStatus: String, errorCode: String?, message: String, retryAfter: String? = nil
    )
        -> GatewayResponse
    {
        var error: [String: JSONValue] = [
            "code": .integer(Int64(status)), "message": .string(message), "status": .string(googleStatus),
        ]
        if let errorCode {
            error["details"] = .array([
                .object([
                    "@type": .string("type.googleapis.com/google.firebase.fcm.v1.FcmError"), "errorCode": .string(errorCode),
                ])
            ])
        }
        return GatewayResponse(status: status, retryAfter: retryAfter, body: Array(JSONValue.object(["error": .object(error)]).jsonText().utf8))
    }

    static func json(_ status: Int, _ text: String) -> GatewayResponse {
        GatewayResponse(status: status, body: Array(text.utf8))
    }
}
