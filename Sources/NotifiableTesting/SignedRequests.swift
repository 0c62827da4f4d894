import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NotifiableCore

/// How a test request covers its body in the signature.
public enum SignedBody: Sendable {
    /// As each kind of client does: server credentials (a backend on the api_auth gem) with
    /// `X-Authorization-Content-SHA256` on POST, PUT and PATCH; device credentials (the Notifiable
    /// SDKs) not at all.
    case asClientsDo
    case unhashed
    case hashed(APIAuth.BodyHash)

    func hash(method: HTTPRequest.Method, role: CredentialRole) -> APIAuth.BodyHash? {
        switch self {
        case .asClientsDo: role == .server && APIAuth.methodsWithBody.contains(method.rawValue) ? .sha256 : nil
        case .unhashed: nil
        case .hashed(let hash): hash
        }
    }
}

/// Requests signed as the Notifiable SDKs and backends sign them.
extension TestClientProtocol {
    /// Signs and sends a request. `body` is sent as is (the SDKs pretty-print JSON).
    @discardableResult
    public func signed(
        _ method: HTTPRequest.Method, _ uri: String, body: String? = nil, as credential: Credential,
        date: Int64? = nil, algorithm: APIAuth.Algorithm = .hmacSHA1,
        bodyHash: SignedBody = .asClientsDo
    ) async throws -> TestResponse {
        let path = String(uri.split(separator: "?", maxSplits: 1).first ?? "")
        let headers = signedHeaders(
            method: method, path: path, body: body ?? "", credential: credential, date: date,
            algorithm: algorithm, bodyHash: bodyHash
        )
        return try await execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
    }
}

extension TestClientProtocol {
    /// Signs and sends a request whose body is raw bytes of `contentType` (uploads).
    @discardableResult
    public func signed(
        _ method: HTTPRequest.Method, _ uri: String, bytes: [UInt8], contentType: String, as credential: Credential,
        headers extra: HTTPFields = [:]
    ) async throws -> TestResponse {
        let path = String(uri.split(separator: "?", maxSplits: 1).first ?? "")
        var headers = HTTPFields()
        for header in APIAuth.signedHeaders(
            method: method.rawValue, path: path, body: bytes, accessID: credential.accessID, secretKey: credential.secretKey,
            date: SigningDates.date(accessID: credential.accessID, method: method.rawValue, path: path, body: bytes),
            bodyHash: SignedBody.asClientsDo.hash(method: method, role: credential.role),
            contentType: contentType
        ) {
            headers.append(HTTPField(name: HTTPField.Name(header.name)!, value: header.value))
        }
        headers.append(contentsOf: extra)
        return try await execute(uri: uri, method: method, headers: headers, body: ByteBuffer(bytes: bytes))
    }

    /// A signed GET with extra headers (conditional and range requests).
    public func signed(_ uri: String, as credential: Credential, headers extra: HTTPFields) async throws -> TestResponse {
        let path = String(uri.split(separator: "?", maxSplits: 1).first ?? "")
        var headers = signedHeaders(method: .get, path: path, body: "", credential: credential)
        headers.append(contentsOf: extra)
        return try await execute(uri: uri, method: .get, headers: headers, body: nil)
    }
}

public func signedHeaders(
    method: HTTPRequest.Method, path: String, body: String, credential: Credential,
    date: Int64? = nil, algorithm: APIAuth.Algorithm = .hmacSHA1,
    bodyHash: SignedBody = .asClientsDo
) -> HTTPFields {
    var fields = HTTPFields()
    for header in APIAuth.signedHeaders(
        method: method.rawValue, path: path, body: Array(body.utf8), accessID: credential.accessID,
        secretKey: credential.secretKey,
        date: date ?? SigningDates.date(accessID: credential.accessID, method: method.rawValue, path: path, body: Array(body.utf8)),
        algorithm: algorithm,
        bodyHash: bodyHash.hash(method: method, role: credential.role)
    ) {
        fields.append(HTTPField(name: HTTPField.Name(header.name)!, value: header.value))
    }
    return fields
}

extension TestResponse {
    /// The body as JSON; `.null` when it is empty or not JSON.
    public var json: JSONValue {
        (try? JSONValue.decode(body.readableBytesView)) ?? .null
    }

    /// The `code` of a JSON error answer.
    public var errorCode: String? { json["error"]?["code"]?.stringValue }
    public var errorField: String? { json["error"]?["field"]?.stringValue }
}

extension JSONValue {
    public subscript(key: String) -> JSONValue? { objectValue?[key] }

    public subscript(index: Int) -> JSONValue? {
        guard case .array(let items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var intValue: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}
