import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// Requests the user-token tests share: minting as the app's backend does, and device
/// requests that carry a user token in the header.
extension TestClientProtocol {
    /// `alias`'s user token, minted with the app's server credentials.
    func userToken(for alias: String, of app: AppStore.CreatedApp) async throws -> String {
        let path = "/api/v1/users/\(alias.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? alias)/tokens"
        let minted = try await signed(.post, path, as: app.serverCredential)
        #expect(minted.status == .created, "\(String(buffer: minted.body))")
        return try #require(minted.json["token"]?.stringValue)
    }

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
