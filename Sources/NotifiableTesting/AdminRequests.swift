import HTTPTypes
import HummingbirdTesting
import NIOCore

extension TestClientProtocol {
    /// Sends an admin request with the service's admin token.
    @discardableResult
    public func admin(
        _ method: HTTPRequest.Method, _ uri: String, body: String? = nil, service: TestService
    ) async throws -> TestResponse {
        try await execute(
            uri: uri, method: method, headers: [.authorization: "Bearer \(service.configuration.adminToken ?? "")"],
            body: body.map { ByteBuffer(string: $0) }
        )
    }
}
