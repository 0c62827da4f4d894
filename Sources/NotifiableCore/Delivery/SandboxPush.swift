import Foundation

/// What a built-in gateway of sandbox mode received for one delivery of an app in sandbox mode.
public struct SandboxPush: Sendable, Equatable {
    public let provider: Provider
    public let token: String
    /// Request headers, names lower-case (the APNs `authorization` / FCM bearer left out).
    public let headers: [String: String]
    /// The request body exactly as sent.
    public let payload: String

    public init(provider: Provider, token: String, headers: [String: String], payload: String) {
        self.provider = provider
        self.token = token
        self.headers = headers.filter { $0.key.lowercased() != "authorization" }
        self.payload = payload
    }
}
