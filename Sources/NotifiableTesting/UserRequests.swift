import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import Testing

/// Requests made for one user: a token minted by the app's backend, then Bearer requests.
extension TestClientProtocol {
    /// A user token for `alias`, minted with the app's server credentials (expects 201).
    public func userToken(for alias: String, as server: Credential) async throws -> String {
        let path = "/api/v1/users/\(alias.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? alias)/tokens"
        let response = try await signed(.post, path, as: server)
        #expect(response.status == .created, "minting a user token: \(String(buffer: response.body))")
        return try #require(response.json["token"]?.stringValue, "minting a user token: \(String(buffer: response.body))")
    }

    /// A request with `Authorization: Bearer <token>`.
    @discardableResult
    public func asUser(_ token: String, _ method: HTTPRequest.Method, _ uri: String, body: String? = nil) async throws -> TestResponse {
        var headers: HTTPFields = [.authorization: "Bearer \(token)"]
        if body != nil { headers[.contentType] = "application/json; charset=utf-8" }
        return try await execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
    }
}
