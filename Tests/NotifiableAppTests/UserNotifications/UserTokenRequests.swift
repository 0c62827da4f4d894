import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// Requests the user-token tests share: device requests that carry a user token in the header
/// (`userToken(for:as:)` in NotifiableTesting mints the token).
extension TestClientProtocol {
    /// A signed request with `X-Notifiable-User-Token: userToken`.
    @discardableResult
    func signed(
        _ method: HTTPRequest.Method, _ uri: String, body: String? = nil, as credential: Credential, userToken: String
    ) async throws -> TestResponse {
        let path = String(uri.split(separator: "?", maxSplits: 1).first ?? "")
        var headers = signedHeaders(method: method, path: path, body: body ?? "", credential: credential)
        headers[HTTPField.Name("X-Notifiable-User-Token")!] = userToken
        return try await execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
    }
}

extension TestService {
    /// A new app that requires verified user aliases, switched on through the admin API.
    func createVerifiedApp(client: some TestClientProtocol) async throws -> AppStore.CreatedApp {
        let app = try await createApp()
        let switched = try await client.admin(.patch, "/admin/apps/\(app.app.id)", body: #"{"require_verified_alias": true}"#, service: self)
        #expect(switched.status == .ok)
        #expect(switched.json["require_verified_alias"] == .bool(true))
        return app
    }
}
